/* cuda_bf16.h - the SIMT test build's stand-in: see simt.h. */
#include "cuda/simt/simt.h"
