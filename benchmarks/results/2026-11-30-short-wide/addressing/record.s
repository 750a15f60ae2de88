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
	subq	$568, %rsp
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
	movq	8(%rsi), %rdx
	testq	%rdx, %rdx
	je	.LBB0_23
	movslq	16(%rdx), %rbx
	cmpq	$2, %rbx
	jne	.LBB0_25
	movzbl	20(%rdx), %r15d
	movzbl	21(%rdx), %r8d
	movzwl	22(%rdx), %ecx
	cmpq	$2, %r15
	jne	.LBB0_29
	cmpb	$32, %r8b
	jne	.LBB0_29
	cmpw	$1, %cx
	jne	.LBB0_29
	cmpq	$0, 32(%rdx)
	jne	.LBB0_31
	movq	(%rdx), %rcx
	addq	40(%rdx), %rcx
	testb	$63, %cl
	jne	.LBB0_33
	movq	24(%rdx), %rdx
	movq	(%rdx), %rbx
	cmpq	$256, %rbx
	jne	.LBB0_35
	movq	8(%rdx), %rbx
	cmpq	$4096, %rbx
	jne	.LBB0_37
	movq	16(%rsi), %rsi
	testq	%rsi, %rsi
	je	.LBB0_39
	movslq	16(%rsi), %rbx
	cmpq	$2, %rbx
	jne	.LBB0_41
	movzbl	20(%rsi), %r15d
	movzbl	21(%rsi), %r8d
	movzwl	22(%rsi), %edx
	cmpq	$2, %r15
	jne	.LBB0_45
	cmpb	$32, %r8b
	jne	.LBB0_45
	cmpw	$1, %dx
	jne	.LBB0_45
	cmpq	$0, 32(%rsi)
	jne	.LBB0_47
	movq	(%rsi), %rdx
	addq	40(%rsi), %rdx
	testb	$63, %dl
	jne	.LBB0_49
	movq	24(%rsi), %rsi
	movq	(%rsi), %rbx
	cmpq	$4, %rbx
	jne	.LBB0_51
	movq	8(%rsi), %rbx
	cmpq	$4096, %rbx
	jne	.LBB0_53
	movq	%rdi, 8(%rsp)
	movq	%rax, 16(%rsp)
	movq	%rcx, 24(%rsp)
	movq	%rdx, 32(%rsp)
	movq	$0, 40(%rsp)
	movq	$43, 48(%rsp)
	movslq	4(%rdi), %rsi
	cmpq	$1, %rsi
	jg	.LBB0_57
	movl	$43, %r8d
	movq	%rcx, %rsi
	xorl	%ebx, %ebx
	movq	%rax, %rdi
	xorl	%ecx, %ecx
	callq	matmul.par0
	jmp	.LBB0_56
.LBB0_57:
	leaq	(,%rsi,8), %rax
	cmpq	$1550, %rsi
	movl	$1549, %ecx
	leaq	matmul.par0.task(%rip), %rdx
	movq	%rdi, %r8
	cmovaeq	%rsi, %rcx
	movl	$43, %esi
	cmpq	%rcx, %rax
	cmovbq	%rax, %rcx
	movq	8(%rdi), %rax
	cmpq	$43, %rcx
	cmovbq	%rcx, %rsi
	leaq	8(%rsp), %rcx
	movq	%rax, %rdi
	callq	*16(%r8)
	movl	%eax, %ebx
.LBB0_56:
	movl	%ebx, %eax
	addq	$568, %rsp
	popq	%rbx
	popq	%r12
	popq	%r13
	popq	%r14
	popq	%r15
	popq	%rbp
	retq
.LBB0_1:
	leaq	.L.str(%rip), %rax
	leaq	56(%rsp), %rbx
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
	movzbl	%r8b, %r12d
	movzwl	%cx, %r14d
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
	movzwl	%dx, %r14d
	movzbl	%r8b, %r12d
	leaq	.L.str.19(%rip), %rdx
.LBB0_13:
	leaq	56(%rsp), %rbx
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
	movb	$0, 56(%rsp,%rax)
	movq	%rbx, %rsi
	movq	8(%r13), %rdi
	callq	*40(%r13)
	movl	$1, %ebx
	jmp	.LBB0_56
.LBB0_47:
	leaq	.L.str.20(%rip), %rdx
	jmp	.LBB0_4
.LBB0_49:
	leaq	.L.str.21(%rip), %rdx
.LBB0_4:
	leaq	56(%rsp), %rbx
	movq	%rdi, %r14
	xorl	%esi, %esi
	movq	%rbx, %rdi
	callq	kiln.append_str
.LBB0_5:
	movb	$0, 56(%rsp,%rax)
	movq	%rbx, %rsi
	movq	8(%r14), %rdi
	callq	*40(%r14)
	movl	$1, %ebx
	jmp	.LBB0_56
.LBB0_51:
	leaq	.L.str.22(%rip), %rdx
	jmp	.LBB0_8
.LBB0_53:
	leaq	.L.str.23(%rip), %rdx
.LBB0_8:
	leaq	56(%rsp), %r14
	movq	%rdi, %r15
	xorl	%esi, %esi
	movq	%r14, %rdi
	callq	kiln.append_str
	movq	%r14, %rdi
	movq	%rax, %rsi
	movq	%rbx, %rdx
	callq	kiln.append_i64
	movb	$0, 56(%rsp,%rax)
	movq	%r14, %rsi
	movq	8(%r15), %rdi
	callq	*40(%r15)
	movl	$1, %ebx
	jmp	.LBB0_56
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
	.p2align	4, 0x90
	.type	matmul.par0,@function
matmul.par0:
	cmpq	%r8, %rcx
	jge	.LBB3_6
	pushq	%rbx
	addq	$320, %rsi
	movabsq	$428994048225803526, %r10
	movl	$4000, %r11d
	movq	%rdx, %r9
	.p2align	4, 0x90
.LBB3_2:
	movq	%rcx, %rax
	imulq	%r10
	vxorps	%xmm0, %xmm0, %xmm0
	movq	$-256, %rbx
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
	movq	%rdx, %rax
	shrq	$63, %rax
	addq	%rdx, %rax
	movq	%rcx, %rdx
	imulq	$43, %rax, %rax
	subq	%rax, %rdx
	negq	%rax
	leaq	43(%rcx,%rax), %rax
	testq	%rdx, %rdx
	cmovnsq	%rdx, %rax
	shlq	$5, %rax
	leaq	(%rax,%rax,2), %rax
	cmpq	$4000, %rax
	cmovgeq	%r11, %rax
	leaq	(%rsi,%rax,4), %rdx
	.p2align	4, 0x90
.LBB3_3:
	vbroadcastss	1024(%rdi,%rbx,4), %zmm24
	vbroadcastss	3072(%rdi,%rbx,4), %zmm31
	vmovaps	-320(%rdx), %zmm25
	vmovaps	-256(%rdx), %zmm26
	vmovaps	-192(%rdx), %zmm27
	vmovaps	-128(%rdx), %zmm28
	vmovaps	-64(%rdx), %zmm29
	vmovaps	(%rdx), %zmm30
	addq	$16384, %rdx
	vfmadd231ps	%zmm25, %zmm24, %zmm23
	vfmadd231ps	%zmm26, %zmm24, %zmm22
	vfmadd231ps	%zmm27, %zmm24, %zmm21
	vfmadd231ps	%zmm28, %zmm24, %zmm20
	vfmadd231ps	%zmm29, %zmm24, %zmm19
	vfmadd231ps	%zmm24, %zmm30, %zmm18
	vbroadcastss	2048(%rdi,%rbx,4), %zmm24
	vfmadd231ps	%zmm25, %zmm31, %zmm11
	vfmadd231ps	%zmm26, %zmm31, %zmm10
	vfmadd231ps	%zmm27, %zmm31, %zmm9
	vfmadd231ps	%zmm28, %zmm31, %zmm8
	vfmadd231ps	%zmm29, %zmm31, %zmm7
	vfmadd231ps	%zmm31, %zmm30, %zmm6
	vbroadcastss	4096(%rdi,%rbx,4), %zmm31
	incq	%rbx
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
	jne	.LBB3_3
	incq	%rcx
	vmovaps	%zmm23, (%r9,%rax,4)
	vmovaps	%zmm22, 64(%r9,%rax,4)
	vmovaps	%zmm21, 128(%r9,%rax,4)
	vmovaps	%zmm20, 192(%r9,%rax,4)
	vmovaps	%zmm19, 256(%r9,%rax,4)
	vmovaps	%zmm18, 320(%r9,%rax,4)
	vmovaps	%zmm17, 16384(%r9,%rax,4)
	vmovaps	%zmm16, 16448(%r9,%rax,4)
	vmovaps	%zmm15, 16512(%r9,%rax,4)
	vmovaps	%zmm14, 16576(%r9,%rax,4)
	vmovaps	%zmm13, 16640(%r9,%rax,4)
	vmovaps	%zmm12, 16704(%r9,%rax,4)
	vmovaps	%zmm11, 32768(%r9,%rax,4)
	vmovaps	%zmm10, 32832(%r9,%rax,4)
	vmovaps	%zmm9, 32896(%r9,%rax,4)
	vmovaps	%zmm8, 32960(%r9,%rax,4)
	vmovaps	%zmm7, 33024(%r9,%rax,4)
	vmovaps	%zmm6, 33088(%r9,%rax,4)
	vmovaps	%zmm5, 49152(%r9,%rax,4)
	vmovaps	%zmm4, 49216(%r9,%rax,4)
	vmovaps	%zmm3, 49280(%r9,%rax,4)
	vmovaps	%zmm2, 49344(%r9,%rax,4)
	vmovaps	%zmm1, 49408(%r9,%rax,4)
	vmovaps	%zmm0, 49472(%r9,%rax,4)
	cmpq	%r8, %rcx
	jne	.LBB3_2
	popq	%rbx
.LBB3_6:
	vzeroupper
	retq
.Lfunc_end3:
	.size	matmul.par0, .Lfunc_end3-matmul.par0

	.p2align	4, 0x90
	.type	matmul.par0.task,@function
matmul.par0.task:
	pushq	%r14
	pushq	%rbx
	pushq	%rax
	movq	40(%rdx), %r10
	movslq	%edi, %r14
	movl	%esi, %r8d
	movslq	%esi, %rbx
	movq	8(%rdx), %rdi
	movq	16(%rdx), %rsi
	movq	24(%rdx), %rcx
	movq	32(%rdx), %r11
	movq	%r10, %rax
	imulq	%r14, %rax
	movq	%rax, %rdx
	orq	%rbx, %rdx
	shrq	$32, %rdx
	je	.LBB4_1
	cqto
	idivq	%rbx
	movq	%rax, %r9
	jmp	.LBB4_3
.LBB4_1:
	xorl	%edx, %edx
	divl	%r8d
	movl	%eax, %r9d
.LBB4_3:
	incq	%r14
	addq	%r11, %r9
	imulq	%r14, %r10
	movq	%r10, %rax
	orq	%rbx, %rax
	shrq	$32, %rax
	je	.LBB4_4
	movq	%r10, %rax
	cqto
	idivq	%rbx
	jmp	.LBB4_6
.LBB4_4:
	movl	%r10d, %eax
	xorl	%edx, %edx
	divl	%r8d
.LBB4_6:
	addq	%r11, %rax
	movq	%rcx, %rdx
	movq	%r9, %rcx
	movq	%rax, %r8
	callq	matmul.par0
	xorl	%eax, %eax
	addq	$8, %rsp
	popq	%rbx
	popq	%r14
	retq
.Lfunc_end4:
	.size	matmul.par0.task, .Lfunc_end4-matmul.par0.task

	.globl	kiln_kernel_query
	.p2align	4, 0x90
	.type	kiln_kernel_query,@function
kiln_kernel_query:
	xorl	%eax, %eax
	cmpl	$1, %edi
	leaq	.Lkiln.library(%rip), %rcx
	cmoveq	%rcx, %rax
	retq
.Lfunc_end5:
	.size	kiln_kernel_query, .Lfunc_end5-kiln_kernel_query

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
