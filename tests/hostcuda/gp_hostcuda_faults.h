// gp_hostcuda_faults.h -- UBSan's report functions, defined by the test tier itself.
//
// The builder compiles kernels with -fsanitize=alignment (and, in GP_HOSTCUDA_SANITIZE=undefined
// mode, all of -fsanitize=undefined plus float-cast-overflow) in recover mode and links *without*
// libubsan: every check the compiler inserted calls one of the functions below. They count the
// faults and keep the first report, and the fake CuPy reads them after each launch and raises
// CUDADriverError, the way a GPU reports a misaligned access when the kernel is synchronized.
// (libubsan would print each source location only once per process and cannot be told, once the
// process has started, to write anywhere but stderr: a test could not see the second fault.)
//
// A misaligned or null access ends the launch on the spot (longjmp back to the launch function),
// as the GPU stops a kernel at such a fault; continuing would run the access itself, which on x86
// faults for 16-byte vector types (movdqa) or reads through a null pointer. The other checks
// record and continue, as the device would compute on.
//
// Data layouts: the first member of every UBSan data record is its source location; the records
// decoded further are libubsan's TypeMismatchData (type_mismatch_v1) and OverflowData.
#pragma once

#include <setjmp.h>

extern "C" {

struct gphc_source_location { const char* file; unsigned int line; unsigned int column; };
struct gphc_type_descriptor { unsigned short kind; unsigned short info; char name[1]; };
struct gphc_type_mismatch { gphc_source_location loc; const gphc_type_descriptor* type;
                            unsigned char log_alignment; unsigned char check_kind; };
struct gphc_overflow { gphc_source_location loc; const gphc_type_descriptor* type; };

static unsigned long long gphc_fault_count = 0;
static char gphc_first_fault[1024];
static thread_local jmp_buf* gphc_escape = 0;  // set by a running launch function (of this thread)

static void gphc_record(const char* kind, const gphc_source_location* loc, const char* detail) {
  if (gphc_fault_count++ == 0) {
    snprintf(gphc_first_fault, sizeof gphc_first_fault, "%s: %s at %s:%u:%u", kind, detail,
             loc && loc->file ? loc->file : "?", loc ? loc->line : 0u, loc ? loc->column : 0u);
  }
}

// The number of faults since the last call, and the first one's report in buf.
unsigned long long gphc_take_faults(char* buf, int size) {
  const unsigned long long n = gphc_fault_count;
  if (n && buf && size > 0) snprintf(buf, (size_t)size, "%s", gphc_first_fault);
  gphc_fault_count = 0;
  return n;
}

void __ubsan_handle_type_mismatch_v1(gphc_type_mismatch* d, uintptr_t pointer) {
  char detail[256];
  const unsigned long long align = 1ull << d->log_alignment;
  if (!pointer) {
    snprintf(detail, sizeof detail, "null pointer of type %s", d->type->name);
    gphc_record("CUDA_ERROR_ILLEGAL_ADDRESS", &d->loc, detail);
    if (gphc_escape) longjmp(*gphc_escape, 1);
  } else if (pointer & (align - 1)) {
    snprintf(detail, sizeof detail, "access to address 0x%llx of type %s, which needs %llu-byte alignment",
             (unsigned long long)pointer, d->type->name, align);
    gphc_record("CUDA_ERROR_MISALIGNED_ADDRESS", &d->loc, detail);
    if (gphc_escape) longjmp(*gphc_escape, 1);
  } else {
    snprintf(detail, sizeof detail, "access to address 0x%llx with insufficient space for type %s",
             (unsigned long long)pointer, d->type->name);
    gphc_record("CUDA_ERROR_ILLEGAL_ADDRESS", &d->loc, detail);
  }
}

#define GPHC_OVERFLOW(NAME, WHAT)                                                   \
  void __ubsan_handle_##NAME(gphc_overflow* d, uintptr_t, uintptr_t) {             \
    char detail[160];                                                               \
    snprintf(detail, sizeof detail, WHAT " in type %s", d->type->name);             \
    gphc_record("undefined behaviour", &d->loc, detail);                            \
  }
GPHC_OVERFLOW(add_overflow, "signed integer overflow in +")
GPHC_OVERFLOW(sub_overflow, "signed integer overflow in -")
GPHC_OVERFLOW(mul_overflow, "signed integer overflow in *")
GPHC_OVERFLOW(divrem_overflow, "integer division overflow or division by zero")
#undef GPHC_OVERFLOW

void __ubsan_handle_negate_overflow(gphc_overflow* d, uintptr_t) {
  char detail[160];
  snprintf(detail, sizeof detail, "signed integer overflow in unary - in type %s", d->type->name);
  gphc_record("undefined behaviour", &d->loc, detail);
}

// The remaining checks of -fsanitize=undefined: reported by kind and source location.
#define GPHC_GENERIC(NAME, WHAT)                                                       \
  void __ubsan_handle_##NAME(gphc_source_location* loc, ...) {                         \
    gphc_record("undefined behaviour", loc, WHAT);                                    \
  }
GPHC_GENERIC(shift_out_of_bounds, "shift by a negative or too large count, or of a negative value")
GPHC_GENERIC(out_of_bounds, "array index out of bounds")
GPHC_GENERIC(load_invalid_value, "load of a value invalid for its type (bool or enum)")
GPHC_GENERIC(pointer_overflow, "pointer arithmetic overflow")
GPHC_GENERIC(vla_bound_not_positive, "variable-length array bound not positive")
GPHC_GENERIC(nonnull_arg, "null passed as a nonnull argument")
GPHC_GENERIC(invalid_builtin, "invalid argument to a builtin (clz/ctz of zero)")
GPHC_GENERIC(alignment_assumption, "alignment assumption violated")
#undef GPHC_GENERIC

// GCC passes no source location to the float-cast check: the kernel name is in the raised error.
void __ubsan_handle_float_cast_overflow(void*, uintptr_t) {
  gphc_record("undefined behaviour", 0, "float to integer conversion out of the integer's range "
              "(the GPU saturates, x86 gives the 'integer indefinite' value)");
}
void __ubsan_handle_nonnull_return_v1(void*, gphc_source_location* loc) {
  gphc_record("undefined behaviour", loc, "null returned from a nonnull function");
}

// Not recoverable in any mode: the generated code reached a point the compiler proved it never
// reaches. Continuing would run undefined code, so stop here with the report.
__attribute__((noreturn)) void __ubsan_handle_builtin_unreachable(gphc_source_location* loc) {
  fprintf(stderr, "gp_hostcuda: __builtin_unreachable reached at %s:%u\n", loc->file, loc->line);
  abort();
}
__attribute__((noreturn)) void __ubsan_handle_missing_return(gphc_source_location* loc) {
  fprintf(stderr, "gp_hostcuda: a non-void function ended without return at %s:%u\n", loc->file, loc->line);
  abort();
}

}  // extern "C"
