/* The exported dlsym, as a trampoline.
 *
 * glibc's dlsym resolves RTLD_NEXT, and the scope of RTLD_DEFAULT, relative to its caller,
 * which it finds from its return address. A C wrapper that called it would make the
 * interposer the caller, and every RTLD_NEXT lookup by a library loaded after it (a malloc
 * wrapper, a sanitizer, another interposer) would find the wrong object, or itself.
 * So the wrapper asks C (gs__dlsym_hook, in hook-dlsym.c) whether it has a hook for the
 * name; if it has, it returns the hook, and if not it *jumps* to glibc's dlsym, leaving the
 * caller's return address in place. */
#if defined(__x86_64__)
        .text
        .globl  dlsym
        .type   dlsym, @function
dlsym:
        .cfi_startproc
        endbr64
        pushq   %rdi
        .cfi_adjust_cfa_offset 8
        pushq   %rsi
        .cfi_adjust_cfa_offset 8
        subq    $8, %rsp                /* keep the stack 16-byte aligned for the call */
        .cfi_adjust_cfa_offset 8
        call    gs__dlsym_hook          /* (handle, name) -> hook, or NULL */
        addq    $8, %rsp
        .cfi_adjust_cfa_offset -8
        popq    %rsi
        .cfi_adjust_cfa_offset -8
        popq    %rdi
        .cfi_adjust_cfa_offset -8
        testq   %rax, %rax
        jz      1f
        ret
1:      jmp     *gs__dlsym_real(%rip)   /* glibc's dlsym, resolved by gs__dlsym_hook */
        .cfi_endproc
        .size   dlsym, .-dlsym
#endif
        .section .note.GNU-stack, "", @progbits
