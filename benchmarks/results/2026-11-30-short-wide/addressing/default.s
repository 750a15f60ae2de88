	.text
	.file	"kiln_kernels"
	.globl	matmul
	.p2align	4, 0x90
	.type	matmul,@function
matmul:
	pushq	%rbp
	pushq	%r15
	pushq	%r14
	pushq	%r13
	pushq	%r12
	pushq	%rbx
	subq	$520, %rsp
	cmpl	$3, %edx
	jne	.LBB0_1
	movq	(%rsi), %rcx
	testq	%rcx, %rcx
	je	.LBB0_3
	movslq	16(%rcx), %rbx
	cmpq	$2, %rbx
	jne	.LBB0_7
	movzbl	20(%rcx), %r15d
	movzbl	21(%rcx), %edx
	movzwl	22(%rcx), %eax
	cmpq	$2, %r15
	jne	.LBB0_12
	cmpb	$32, %dl
	jne	.LBB0_12
	cmpw	$1, %ax
	jne	.LBB0_12
	cmpq	$0, 32(%rcx)
	jne	.LBB0_15
	movq	(%rcx), %rax
	addq	40(%rcx), %rax
	testb	$63, %al
	jne	.LBB0_17
	movq	24(%rcx), %rcx
	movq	(%rcx), %rbx
	cmpq	$4, %rbx
	jne	.LBB0_19
	movq	8(%rcx), %rbx
	cmpq	$256, %rbx
	jne	.LBB0_21
	movq	8(%rsi), %rcx
	testq	%rcx, %rcx
	je	.LBB0_23
	movslq	16(%rcx), %rbx
	cmpq	$2, %rbx
	jne	.LBB0_25
	movzbl	20(%rcx), %r15d
	movzbl	21(%rcx), %r8d
	movzwl	22(%rcx), %edx
	cmpq	$2, %r15
	jne	.LBB0_29
	cmpb	$32, %r8b
	jne	.LBB0_29
	cmpw	$1, %dx
	jne	.LBB0_29
	cmpq	$0, 32(%rcx)
	jne	.LBB0_31
	movq	(%rcx), %rdx
	movq	40(%rcx), %r8
	leal	(%rdx,%r8), %r9d
	testb	$63, %r9b
	jne	.LBB0_33
	movq	24(%rcx), %rcx
	movq	(%rcx), %rbx
	cmpq	$256, %rbx
	jne	.LBB0_35
	movq	8(%rcx), %rbx
	cmpq	$4096, %rbx
	jne	.LBB0_37
	movq	16(%rsi), %rsi
	testq	%rsi, %rsi
	je	.LBB0_39
	movslq	16(%rsi), %rbx
	cmpq	$2, %rbx
	jne	.LBB0_41
	movzbl	20(%rsi), %r15d
	movzbl	21(%rsi), %r9d
	movzwl	22(%rsi), %ecx
	cmpq	$2, %r15
	jne	.LBB0_45
	cmpb	$32, %r9b
	jne	.LBB0_45
	cmpw	$1, %cx
	jne	.LBB0_45
	cmpq	$0, 32(%rsi)
	jne	.LBB0_47
	movq	(%rsi), %rcx
	addq	40(%rsi), %rcx
	testb	$63, %cl
	jne	.LBB0_49
	movq	24(%rsi), %rsi
	movq	(%rsi), %rbx
	cmpq	$4, %rbx
	jne	.LBB0_51
	movq	8(%rsi), %rbx
	cmpq	$4096, %rbx
	jne	.LBB0_53
	leaq	320(%r8,%rdx), %rdx
	addq	$3072, %rax
	movl	$4000, %edi
	xorl	%esi, %esi
	xorl	%r8d, %r8d
	.p2align	4, 0x90
.LBB0_55:
	cmpq	$4000, %rsi
	movl	$4000, %r9d
	vxorps	%xmm0, %xmm0, %xmm0
	movq	$-1024, %r11
	vxorps	%xmm1, %xmm1, %xmm1
	vxorps	%xmm2, %xmm2, %xmm2
	vxorps	%xmm3, %xmm3, %xmm3
	vxorps	%xmm4, %xmm4, %xmm4
	vxorps	%xmm5, %xmm5, %xmm5
	vxorps	%xmm6, %xmm6, %xmm6
	vxorps	%xmm7, %xmm7, %xmm7
	vxorps	%xmm8, %xmm8, %xmm8
	vxorps	%xmm9, %xmm9, %xmm9
	vxorps	%xmm10, %xmm10, %xmm10
	vxorps	%xmm11, %xmm11, %xmm11
	vxorps	%xmm12, %xmm12, %xmm12
	vxorps	%xmm13, %xmm13, %xmm13
	vxorps	%xmm14, %xmm14, %xmm14
	vxorps	%xmm15, %xmm15, %xmm15
	vxorps	%xmm16, %xmm16, %xmm16
	vxorps	%xmm17, %xmm17, %xmm17
	vxorps	%xmm18, %xmm18, %xmm18
	vxorps	%xmm19, %xmm19, %xmm19
	vxorps	%xmm20, %xmm20, %xmm20
	vxorps	%xmm21, %xmm21, %xmm21
	vxorps	%xmm22, %xmm22, %xmm22
	vxorps	%xmm23, %xmm23, %xmm23
	cmovbq	%rsi, %r9
	movl	%r9d, %r9d
	leaq	(%rdx,%r9,4), %r10
	movq	%r8, %r9
	shlq	$5, %r9
	leaq	(%r9,%r9,2), %r9
	cmpq	$4000, %r9
	cmovaeq	%rdi, %r9
	.p2align	4, 0x90
.LBB0_56:
	vbroadcastss	-2048(%rax,%r11), %zmm24
	vbroadcastss	(%rax,%r11), %zmm31
	vmovups	-320(%r10), %zmm25
	vmovups	-256(%r10), %zmm26
	vmovups	-192(%r10), %zmm27
	vmovups	-128(%r10), %zmm28
	vmovups	-64(%r10), %zmm29
	vmovups	(%r10), %zmm30
	addq	$16384, %r10
	vfmadd231ps	%zmm25, %zmm24, %zmm23
	vfmadd231ps	%zmm26, %zmm24, %zmm22
	vfmadd231ps	%zmm27, %zmm24, %zmm21
	vfmadd231ps	%zmm28, %zmm24, %zmm20
	vfmadd231ps	%zmm29, %zmm24, %zmm19
	vfmadd231ps	%zmm24, %zmm30, %zmm18
	vbroadcastss	-1024(%rax,%r11), %zmm24
	vfmadd231ps	%zmm25, %zmm31, %zmm11
	vfmadd231ps	%zmm26, %zmm31, %zmm10
	vfmadd231ps	%zmm27, %zmm31, %zmm9
	vfmadd231ps	%zmm28, %zmm31, %zmm8
	vfmadd231ps	%zmm29, %zmm31, %zmm7
	vfmadd231ps	%zmm31, %zmm30, %zmm6
	vbroadcastss	1024(%rax,%r11), %zmm31
	addq	$4, %r11
	vfmadd231ps	%zmm25, %zmm24, %zmm17
	vfmadd231ps	%zmm26, %zmm24, %zmm16
	vfmadd231ps	%zmm27, %zmm24, %zmm15
	vfmadd231ps	%zmm28, %zmm24, %zmm14
	vfmadd231ps	%zmm29, %zmm24, %zmm13
	vfmadd231ps	%zmm24, %zmm30, %zmm12
	vfmadd231ps	%zmm25, %zmm31, %zmm5
	vfmadd231ps	%zmm26, %zmm31, %zmm4
	vfmadd231ps	%zmm27, %zmm31, %zmm3
	vfmadd231ps	%zmm28, %zmm31, %zmm2
	vfmadd231ps	%zmm29, %zmm31, %zmm1
	vfmadd231ps	%zmm30, %zmm31, %zmm0
	jne	.LBB0_56
	incq	%r8
	addq	$96, %rsi
	vmovups	%zmm23, (%rcx,%r9,4)
	vmovups	%zmm22, 64(%rcx,%r9,4)
	vmovups	%zmm21, 128(%rcx,%r9,4)
	vmovups	%zmm20, 192(%rcx,%r9,4)
	vmovups	%zmm19, 256(%rcx,%r9,4)
	vmovups	%zmm18, 320(%rcx,%r9,4)
	vmovups	%zmm17, 16384(%rcx,%r9,4)
	vmovups	%zmm16, 16448(%rcx,%r9,4)
	vmovups	%zmm15, 16512(%rcx,%r9,4)
	vmovups	%zmm14, 16576(%rcx,%r9,4)
	vmovups	%zmm13, 16640(%rcx,%r9,4)
	vmovups	%zmm12, 16704(%rcx,%r9,4)
	vmovups	%zmm11, 32768(%rcx,%r9,4)
	vmovups	%zmm10, 32832(%rcx,%r9,4)
	vmovups	%zmm9, 32896(%rcx,%r9,4)
	vmovups	%zmm8, 32960(%rcx,%r9,4)
	vmovups	%zmm7, 33024(%rcx,%r9,4)
	vmovups	%zmm6, 33088(%rcx,%r9,4)
	vmovups	%zmm5, 49152(%rcx,%r9,4)
	vmovups	%zmm4, 49216(%rcx,%r9,4)
	vmovups	%zmm3, 49280(%rcx,%r9,4)
	vmovups	%zmm2, 49344(%rcx,%r9,4)
	vmovups	%zmm1, 49408(%rcx,%r9,4)
	vmovups	%zmm0, 49472(%rcx,%r9,4)
	cmpq	$43, %r8
	jne	.LBB0_55
	xorl	%eax, %eax
.LBB0_59:
	addq	$520, %rsp
	popq	%rbx
	popq	%r12
	popq	%r13
	popq	%r14
	popq	%r15
	popq	%rbp
	vzeroupper
	retq
.LBB0_1:
	leaq	.L.str(%rip), %rax
	leaq	8(%rsp), %rbx
	movq	%rdi, %r14
	movl	%edx, %ebp
	xorl	%esi, %esi
	movq	%rbx, %rdi
	movq	%rax, %rdx
	callq	kiln.append_str
	movslq	%ebp, %rdx
	movq	%rbx, %rdi
	movq	%rax, %rsi
	callq	kiln.append_i64
	jmp	.LBB0_5
.LBB0_3:
	leaq	.L.str.1(%rip), %rdx
	jmp	.LBB0_4
.LBB0_7:
	leaq	.L.str.2(%rip), %rdx
	jmp	.LBB0_8
.LBB0_12:
	movzbl	%dl, %r12d
	movzwl	%ax, %r14d
	leaq	.L.str.3(%rip), %rdx
	jmp	.LBB0_13
.LBB0_15:
	leaq	.L.str.6(%rip), %rdx
	jmp	.LBB0_4
.LBB0_17:
	leaq	.L.str.7(%rip), %rdx
	jmp	.LBB0_4
.LBB0_19:
	leaq	.L.str.8(%rip), %rdx
	jmp	.LBB0_8
.LBB0_21:
	leaq	.L.str.9(%rip), %rdx
	jmp	.LBB0_8
.LBB0_23:
	leaq	.L.str.10(%rip), %rdx
	jmp	.LBB0_4
.LBB0_25:
	leaq	.L.str.11(%rip), %rdx
	jmp	.LBB0_8
.LBB0_29:
	movzwl	%dx, %r14d
	movzbl	%r8b, %r12d
	leaq	.L.str.12(%rip), %rdx
	jmp	.LBB0_13
.LBB0_31:
	leaq	.L.str.13(%rip), %rdx
	jmp	.LBB0_4
.LBB0_33:
	leaq	.L.str.14(%rip), %rdx
	jmp	.LBB0_4
.LBB0_35:
	leaq	.L.str.15(%rip), %rdx
	jmp	.LBB0_8
.LBB0_37:
	leaq	.L.str.16(%rip), %rdx
	jmp	.LBB0_8
.LBB0_39:
	leaq	.L.str.17(%rip), %rdx
	jmp	.LBB0_4
.LBB0_41:
	leaq	.L.str.18(%rip), %rdx
	jmp	.LBB0_8
.LBB0_45:
	movzbl	%r9b, %r12d
	movzwl	%cx, %r14d
	leaq	.L.str.19(%rip), %rdx
.LBB0_13:
	leaq	8(%rsp), %rbx
	movq	%rdi, %r13
	xorl	%esi, %esi
	movq	%rbx, %rdi
	callq	kiln.append_str
	movq	%rbx, %rdi
	movq	%rax, %rsi
	movq	%r15, %rdx
	callq	kiln.append_i64
	leaq	.L.str.4(%rip), %rdx
	movq	%rbx, %rdi
	movq	%rax, %rsi
	callq	kiln.append_str
	movq	%rbx, %rdi
	movq	%rax, %rsi
	movq	%r12, %rdx
	callq	kiln.append_i64
	leaq	.L.str.5(%rip), %rdx
	movq	%rbx, %rdi
	movq	%rax, %rsi
	callq	kiln.append_str
	movq	%rbx, %rdi
	movq	%rax, %rsi
	movq	%r14, %rdx
	callq	kiln.append_i64
	movb	$0, 8(%rsp,%rax)
	movq	%rbx, %rsi
	movq	8(%r13), %rdi
	callq	*40(%r13)
	movl	$1, %eax
	jmp	.LBB0_59
.LBB0_47:
	leaq	.L.str.20(%rip), %rdx
	jmp	.LBB0_4
.LBB0_49:
	leaq	.L.str.21(%rip), %rdx
.LBB0_4:
	leaq	8(%rsp), %rbx
	movq	%rdi, %r14
	xorl	%esi, %esi
	movq	%rbx, %rdi
	callq	kiln.append_str
.LBB0_5:
	movb	$0, 8(%rsp,%rax)
	movq	%rbx, %rsi
	movq	8(%r14), %rdi
	callq	*40(%r14)
	movl	$1, %eax
	jmp	.LBB0_59
.LBB0_51:
	leaq	.L.str.22(%rip), %rdx
	jmp	.LBB0_8
.LBB0_53:
	leaq	.L.str.23(%rip), %rdx
.LBB0_8:
	leaq	8(%rsp), %r14
	movq	%rdi, %r15
	xorl	%esi, %esi
	movq	%r14, %rdi
	callq	kiln.append_str
	movq	%r14, %rdi
	movq	%rax, %rsi
	movq	%rbx, %rdx
	callq	kiln.append_i64
	movb	$0, 8(%rsp,%rax)
	movq	%r14, %rsi
	movq	8(%r15), %rdi
	callq	*40(%r15)
	movl	$1, %eax
	jmp	.LBB0_59
.Lfunc_end0:
	.size	matmul, .Lfunc_end0-matmul

	.section	.text.unlikely.,"ax",@progbits
	.p2align	4, 0x90
	.type	kiln.append_str,@function
kiln.append_str:
	movzbl	(%rdx), %ecx
	cmpq	$511, %rsi
	movq	%rsi, %rax
	setge	%sil
	testb	%cl, %cl
	sete	%r8b
	orb	%sil, %r8b
	jne	.LBB1_4
	incq	%rdx
	.p2align	4, 0x90
.LBB1_2:
	movq	%rax, %rsi
	movb	%cl, (%rdi,%rax)
	incq	%rax
	cmpq	$509, %rsi
	jg	.LBB1_4
	movzbl	(%rdx), %ecx
	incq	%rdx
	testb	%cl, %cl
	jne	.LBB1_2
.LBB1_4:
	retq
.Lfunc_end1:
	.size	kiln.append_str, .Lfunc_end1-kiln.append_str

	.section	.rodata,"a",@progbits
	.p2align	6, 0x0
.LCPI2_0:
	.byte	63
	.byte	62
	.byte	61
	.byte	60
	.byte	59
	.byte	58
	.byte	57
	.byte	56
	.byte	55
	.byte	54
	.byte	53
	.byte	52
	.byte	51
	.byte	50
	.byte	49
	.byte	48
	.byte	47
	.byte	46
	.byte	45
	.byte	44
	.byte	43
	.byte	42
	.byte	41
	.byte	40
	.byte	39
	.byte	38
	.byte	37
	.byte	36
	.byte	35
	.byte	34
	.byte	33
	.byte	32
	.byte	31
	.byte	30
	.byte	29
	.byte	28
	.byte	27
	.byte	26
	.byte	25
	.byte	24
	.byte	23
	.byte	22
	.byte	21
	.byte	20
	.byte	19
	.byte	18
	.byte	17
	.byte	16
	.byte	15
	.byte	14
	.byte	13
	.byte	12
	.byte	11
	.byte	10
	.byte	9
	.byte	8
	.byte	7
	.byte	6
	.byte	5
	.byte	4
	.byte	3
	.byte	2
	.byte	1
	.byte	0
	.section	.text.unlikely.,"ax",@progbits
	.p2align	4, 0x90
	.type	kiln.append_i64,@function
kiln.append_i64:
	pushq	%rbp
	pushq	%rbx
	testq	%rdx, %rdx
	movq	%rdx, %rax
	movl	$511, %r8d
	movl	$45, %r9d
	movq	$-1, %r10
	sets	%cl
	negq	%rdx
	cmovsq	%rax, %rdx
	cmpq	$511, %rsi
	setl	%al
	cmovlq	%rsi, %r8
	andb	%cl, %al
	movzbl	(%rdi,%r8), %ecx
	cmovel	%ecx, %r9d
	xorl	%ecx, %ecx
	movb	%r9b, (%rdi,%r8)
	movzbl	%al, %r9d
	leaq	-88(%rsp), %r8
	movabsq	$-3689348814741910323, %rax
	.p2align	4, 0x90
.LBB2_1:
	mulxq	%rax, %r11, %r11
	movl	%edx, %ebp
	incq	%rcx
	incq	%r10
	shrq	$3, %r11
	leal	(%r11,%r11), %ebx
	leal	(%rbx,%rbx,4), %ebx
	subl	%ebx, %ebp
	orb	$48, %bpl
	movb	%bpl, 64(%r8)
	incq	%r8
	cmpq	$9, %rdx
	movq	%r11, %rdx
	ja	.LBB2_1
	addq	%rsi, %r9
	leaq	-1(%rcx), %rbx
	movabsq	$9223372036854775806, %rdx
	cmpq	$511, %r9
	setge	%al
	cmpq	%rdx, %rbx
	seta	%dl
	orb	%al, %dl
	jne	.LBB2_3
	movl	$510, %edx
	subq	%r9, %rdx
	cmpq	%rdx, %rbx
	movq	%rdx, %rsi
	cmovbq	%rbx, %rsi
	cmpq	$255, %rsi
	jae	.LBB2_6
	movq	%r9, %rax
	jmp	.LBB2_9
.LBB2_3:
	movq	%r9, %rax
	popq	%rbx
	popq	%rbp
	retq
.LBB2_6:
	incq	%rsi
	vmovdqa64	.LCPI2_0(%rip), %zmm0
	movq	%rsi, %r11
	andq	$-256, %r11
	cmpq	%rdx, %r10
	cmovaeq	%rdx, %r10
	leaq	(%r9,%r11), %rax
	leaq	192(%rdi,%r9), %r9
	incq	%r10
	andq	$-256, %r10
	subq	%r10, %rcx
	cmpq	%rdx, %rbx
	cmovbq	%rbx, %rdx
	xorl	%r10d, %r10d
	incq	%rdx
	andq	$-256, %rdx
	.p2align	4, 0x90
.LBB2_7:
	vpermb	(%r8), %zmm0, %zmm1
	vpermb	-64(%r8), %zmm0, %zmm2
	vpermb	-128(%r8), %zmm0, %zmm3
	vpermb	-192(%r8), %zmm0, %zmm4
	addq	$-256, %r8
	vmovdqu64	%zmm1, -192(%r9,%r10)
	vmovdqu64	%zmm2, -128(%r9,%r10)
	vmovdqu64	%zmm3, -64(%r9,%r10)
	vmovdqu64	%zmm4, (%r9,%r10)
	addq	$256, %r10
	cmpq	%r10, %rdx
	jne	.LBB2_7
	cmpq	%r11, %rsi
	je	.LBB2_12
.LBB2_9:
	movq	%rax, %rdx
	.p2align	4, 0x90
.LBB2_10:
	movzbl	-25(%rsp,%rcx), %eax
	movb	%al, (%rdi,%rdx)
	leaq	1(%rdx), %rax
	cmpq	$2, %rcx
	jb	.LBB2_12
	decq	%rcx
	cmpq	$510, %rdx
	movq	%rax, %rdx
	jl	.LBB2_10
.LBB2_12:
	popq	%rbx
	popq	%rbp
	vzeroupper
	retq
.Lfunc_end2:
	.size	kiln.append_i64, .Lfunc_end2-kiln.append_i64

	.text
	.globl	kiln_kernel_query
	.p2align	4, 0x90
	.type	kiln_kernel_query,@function
kiln_kernel_query:
	xorl	%eax, %eax
	cmpl	$1, %edi
	leaq	.Lkiln.library(%rip), %rcx
	cmoveq	%rcx, %rax
	retq
.Lfunc_end3:
	.size	kiln_kernel_query, .Lfunc_end3-kiln_kernel_query

	.type	.L.str,@object
	.section	.rodata.str1.1,"aMS",@progbits,1
.L.str:
	.asciz	"matmul: expected 3 arguments, got "
	.size	.L.str, 35

	.type	.L.str.1,@object
.L.str.1:
	.asciz	"matmul: argument A is a null tensor"
	.size	.L.str.1, 36

	.type	.L.str.2,@object
.L.str.2:
	.asciz	"matmul: argument A: expected ndim 2, got "
	.size	.L.str.2, 42

	.type	.L.str.3,@object
.L.str.3:
	.asciz	"matmul: argument A: expected dtype float32, got code "
	.size	.L.str.3, 54

	.type	.L.str.4,@object
.L.str.4:
	.asciz	" bits "
	.size	.L.str.4, 7

	.type	.L.str.5,@object
.L.str.5:
	.asciz	" lanes "
	.size	.L.str.5, 8

	.type	.L.str.6,@object
.L.str.6:
	.asciz	"matmul: argument A: strides must be NULL (only compact row-major tensors are supported)"
	.size	.L.str.6, 88

	.type	.L.str.7,@object
.L.str.7:
	.asciz	"matmul: argument A: data is not 64-byte aligned"
	.size	.L.str.7, 48

	.type	.L.str.8,@object
.L.str.8:
	.asciz	"matmul: argument A, dimension 0: expected 4, got "
	.size	.L.str.8, 50

	.type	.L.str.9,@object
.L.str.9:
	.asciz	"matmul: argument A, dimension 1: expected 256, got "
	.size	.L.str.9, 52

	.type	.L.str.10,@object
.L.str.10:
	.asciz	"matmul: argument B is a null tensor"
	.size	.L.str.10, 36

	.type	.L.str.11,@object
.L.str.11:
	.asciz	"matmul: argument B: expected ndim 2, got "
	.size	.L.str.11, 42

	.type	.L.str.12,@object
.L.str.12:
	.asciz	"matmul: argument B: expected dtype float32, got code "
	.size	.L.str.12, 54

	.type	.L.str.13,@object
.L.str.13:
	.asciz	"matmul: argument B: strides must be NULL (only compact row-major tensors are supported)"
	.size	.L.str.13, 88

	.type	.L.str.14,@object
.L.str.14:
	.asciz	"matmul: argument B: data is not 64-byte aligned"
	.size	.L.str.14, 48

	.type	.L.str.15,@object
.L.str.15:
	.asciz	"matmul: argument B, dimension 0: expected 256, got "
	.size	.L.str.15, 52

	.type	.L.str.16,@object
.L.str.16:
	.asciz	"matmul: argument B, dimension 1: expected 4096, got "
	.size	.L.str.16, 53

	.type	.L.str.17,@object
.L.str.17:
	.asciz	"matmul: argument C is a null tensor"
	.size	.L.str.17, 36

	.type	.L.str.18,@object
.L.str.18:
	.asciz	"matmul: argument C: expected ndim 2, got "
	.size	.L.str.18, 42

	.type	.L.str.19,@object
.L.str.19:
	.asciz	"matmul: argument C: expected dtype float32, got code "
	.size	.L.str.19, 54

	.type	.L.str.20,@object
.L.str.20:
	.asciz	"matmul: argument C: strides must be NULL (only compact row-major tensors are supported)"
	.size	.L.str.20, 88

	.type	.L.str.21,@object
.L.str.21:
	.asciz	"matmul: argument C: data is not 64-byte aligned"
	.size	.L.str.21, 48

	.type	.L.str.22,@object
.L.str.22:
	.asciz	"matmul: argument C, dimension 0: expected 4, got "
	.size	.L.str.22, 50

	.type	.L.str.23,@object
.L.str.23:
	.asciz	"matmul: argument C, dimension 1: expected 4096, got "
	.size	.L.str.23, 53

	.type	.L.str.24,@object
.L.str.24:
	.asciz	"matmul"
	.size	.L.str.24, 7

	.type	.Lkiln.kernels,@object
	.section	.data.rel.ro,"aw",@progbits
	.p2align	4, 0x0
.Lkiln.kernels:
	.quad	.L.str.24
	.quad	matmul
	.long	3
	.long	0
	.size	.Lkiln.kernels, 24

	.type	.L.str.25,@object
	.section	.rodata.str1.1,"aMS",@progbits,1
.L.str.25:
	.asciz	"x86_64-pc-linux-gnu"
	.size	.L.str.25, 20

	.type	.L.str.26,@object
.L.str.26:
	.asciz	"znver5"
	.size	.L.str.26, 7

	.type	.L.str.27,@object
.L.str.27:
	.asciz	"+64bit,+adx,+aes,+avx,+avx2,+avx512bf16,+avx512bitalg,+avx512bw,+avx512cd,+avx512dq,+avx512f,+avx512ifma,+avx512vbmi,+avx512vbmi2,+avx512vl,+avx512vnni,+avx512vp2intersect,+avx512vpopcntdq,+avxvnni,+bmi,+bmi2,+clflushopt,+clwb,+clzero,+cmov,+crc32,+cx16,+cx8,+evex512,+f16c,+fma,+fsgsbase,+fxsr,+gfni,+invpcid,+lzcnt,+mmx,+movbe,+pclmul,+popcnt,+prfchw,+rdpid,+rdrnd,+rdseed,+sahf,+sha,+shstk,+sse,+sse2,+sse3,+sse4.1,+sse4.2,+sse4a,+ssse3,+vaes,+vpclmulqdq,+xsave,+xsavec,+xsaveopt,+xsaves,-amx-bf16,-amx-complex,-amx-fp16,-amx-int8,-amx-tile,-avx10.1-256,-avx10.1-512,-avx512fp16,-avxifma,-avxneconvert,-avxvnniint16,-avxvnniint8,-ccmp,-cf,-cldemote,-cmpccxadd,-egpr,-enqcmd,-fma4,-hreset,-kl,-lwp,-movdir64b,-movdiri,-mwaitx,-ndd,-pconfig,-pku,-ppx,-prefetchi,-ptwrite,-push2pop2,-raoint,-rdpru,-rtm,-serialize,-sgx,-sha512,-sm3,-sm4,-tbm,-tsxldtrk,-uintr,-usermsr,-waitpkg,-wbnoinvd,-widekl,-xop,+prefer-no-gather,+prefer-no-scatter"
	.size	.L.str.27, 937

	.type	.Lkiln.library,@object
	.section	.data.rel.ro,"aw",@progbits
	.p2align	4, 0x0
.Lkiln.library:
	.long	1
	.long	1
	.quad	.Lkiln.kernels
	.quad	.L.str.25
	.quad	.L.str.26
	.quad	.L.str.27
	.size	.Lkiln.library, 40

	.section	".note.GNU-stack","",@progbits
