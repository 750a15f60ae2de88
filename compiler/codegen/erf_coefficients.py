# Generates the erf polynomial coefficients of compiler/codegen/vector_math.cc
# (Chebyshev fits with mpmath, printed as C++ arrays). Run: /usr/bin/python3 erf_coefficients.py (Debian's python3-mpmath)
import mpmath as mp
mp.mp.dps = 60
def P(u): return mp.erf(mp.sqrt(u))/mp.sqrt(u) if u > 0 else 2/mp.sqrt(mp.pi)
def R(t): return mp.erfc(1/t)*mp.exp(1/t**2)/t
def emit(name, f, a, b, n):
    a = mp.mpf(a); b = mp.mpf(b); c = (a + b) / 2; h = (b - a) / 2
    poly, err = mp.chebyfit(lambda s: f(s + c), [-h, h], n, error=True)
    coeffs = [float(p) for p in poly]
    # error of the double coefficients
    worst = 0
    for i in range(2001):
        s = -h + 2*h*i/2000
        v = mp.mpf(0)
        for co in coeffs: v = v*s + mp.mpf(co)
        worst = max(worst, abs(v - f(s + c)) / abs(f(s + c)))
    print('// %s: fit of degree %d in (t - %s), t in [%s, %s]; max rel error %.3g' % (name, n - 1, mp.nstr(c, 17), mp.nstr(a, 6), mp.nstr(b, 6), float(worst)))
    print('constexpr double %s_center = %r;' % (name, float(c)))
    print('constexpr double %s[] = {%s};' % (name, ', '.join('%r' % x for x in coeffs)))
emit('kErfSmall32', P, 0, 1, 7)
emit('kErfcLarge32', R, 0.25, 1, 10)
emit('kErfSmall64', P, 0, 1, 12)
emit('kErfcMid64', R, 0.4, 1, 19)
emit('kErfcFar64', R, mp.mpf(1)/6, 0.4, 15)
# tanh(x)/x as a polynomial in x^2 for |x| < 0.625 (vector_math.cc's Tanh).
def TanhOverX(u): return mp.tanh(mp.sqrt(u))/mp.sqrt(u) if u > 0 else mp.mpf(1)
emit('kTanhSmall32', TanhOverX, 0, mp.mpf(0.625)**2, 6)
emit('kTanhSmall64', TanhOverX, 0, mp.mpf(0.625)**2, 13)
