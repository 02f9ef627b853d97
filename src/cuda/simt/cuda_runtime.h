/* cuda_runtime.h - the SIMT test build's stand-in: see simt.h. */
#include "cuda/simt/simt.h"
