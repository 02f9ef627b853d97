# Cross build for ARM64 (aarch64) Linux with Debian's cross compiler and the
# multiarch arm64 -dev packages (`scripts/deps.sh arm64` installs both).
# Tests run through qemu-user: ctest prefixes every test with the emulator.
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# pkg-config must see the arm64 .pc files only.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
# The arm64 libraries live in the host's multiarch folders (/lib/aarch64-linux-gnu,
# with the dynamic loader in /lib), so the emulator's root is /.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64;-L;/)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
