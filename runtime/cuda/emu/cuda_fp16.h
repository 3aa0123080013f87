/* cuda_fp16.h — the CUDA execution layer (runtime/cuda/emu/galv_emu.h) */
#include "galv_emu.h"
