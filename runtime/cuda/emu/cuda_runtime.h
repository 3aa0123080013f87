/* cuda_runtime.h — the CUDA execution layer (runtime/cuda/emu/galv_emu.h) */
#include "galv_emu.h"
