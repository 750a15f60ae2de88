#include "kernels/int8_matmul.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "kernels/int8_pack.h"
#include "kernels/kernel_test_util.h"
#include "runtime/registry.h"
#include "runtime/thread_pool.h"

namespace kiln {
namespace kernels {
namespace {

using testing::MakeTensor;
using testing::Values;
using testing::Zeros;

// Random bytes of an 8-bit type, a quarter of them the type's extremes
// (0/255 or -128/127), where sign and overflow mistakes show.
std::vector<uint8_t> RandomBytes(int64_t count, bool is_signed, std::mt19937* gen) {
  std::uniform_int_distribution<int> any(0, 255), pick(0, 7);
  std::vector<uint8_t> v(static_cast<size_t>(count));
  for (auto& x : v) {
    int c = pick(*gen);
    if (c == 0) x = is_signed ? 0x80 : 0;    // -128 or 0
    else if (c == 1) x = is_signed ? 0x7F : 255;  // 127 or 255
    else x = static_cast<uint8_t>(any(*gen));
  }
  return v;
}

int Value(uint8_t byte, bool is_signed) { return is_signed ? int{static_cast<int8_t>(byte)} : int{byte}; }

struct Case {
  std::vector<int64_t> a_shape;  // [..., M, K]
  int64_t n;
  bool a_signed, b_signed;
  bool za_per_row, zb_per_col;
};

std::string Name(const Case& c) {
  std::string s;
  for (int64_t d : c.a_shape) s += std::to_string(d) + "x";
  return s + std::to_string(c.n) + (c.a_signed ? " s8" : " u8") + (c.b_signed ? "*s8" : "*u8") +
         (c.za_per_row ? " za/row" : "") + (c.zb_per_col ? " zb/col" : "");
}

// Builds A, B and the zero points of `c` and the definition's result
// sum_k (A - za)(B - zb), computed in int64 and wrapped to int32.
struct Data {
  Tensor a, b, za, zb;
  std::vector<int32_t> want;
  int64_t rows = 1, m = 0, k = 0;
};

Data Make(const Case& c, uint32_t seed) {
  std::mt19937 gen(seed);
  Data d;
  d.k = c.a_shape.back();
  d.m = c.a_shape[c.a_shape.size() - 2];
  for (size_t i = 0; i + 1 < c.a_shape.size(); ++i) d.rows *= c.a_shape[i];
  const DType at = c.a_signed ? DType::Int8() : DType::UInt8();
  const DType bt = c.b_signed ? DType::Int8() : DType::UInt8();
  std::vector<uint8_t> a = RandomBytes(d.rows * d.k, c.a_signed, &gen);
  std::vector<uint8_t> b = RandomBytes(d.k * c.n, c.b_signed, &gen);
  std::vector<uint8_t> za = RandomBytes(c.za_per_row ? d.m : 1, c.a_signed, &gen);
  std::vector<uint8_t> zb = RandomBytes(c.zb_per_col ? c.n : 1, c.b_signed, &gen);
  d.a = MakeTensor<uint8_t>(c.a_shape, a, at);
  d.b = MakeTensor<uint8_t>({d.k, c.n}, b, bt);
  d.za = MakeTensor<uint8_t>({static_cast<int64_t>(za.size())}, za, at);
  d.zb = MakeTensor<uint8_t>({static_cast<int64_t>(zb.size())}, zb, bt);
  d.want.resize(static_cast<size_t>(d.rows * c.n));
  for (int64_t r = 0; r < d.rows; ++r) {
    const int zar = Value(za[c.za_per_row ? r % d.m : 0], c.a_signed);
    for (int64_t j = 0; j < c.n; ++j) {
      const int zbj = Value(zb[c.zb_per_col ? j : 0], c.b_signed);
      int64_t s = 0;
      for (int64_t k = 0; k < d.k; ++k) {
        s += int64_t{Value(a[r * d.k + k], c.a_signed) - zar} * (Value(b[k * c.n + j], c.b_signed) - zbj);
      }
      d.want[r * c.n + j] = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(s)));
    }
  }
  return d;
}

std::vector<int64_t> OutShape(const Case& c) {
  std::vector<int64_t> s(c.a_shape.begin(), c.a_shape.end() - 1);
  s.push_back(c.n);
  return s;
}

Status CallPacked(const char* name, std::vector<Any> args) {
  Result<PackedFunc> f = LookupGlobalFunction(name);
  KILN_RETURN_IF_ERROR(f.status());
  Any ret;
  return (*f)(Span<const Any>(args.data(), args.size()), &ret);
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  // Shapes with every tail: M not a multiple of the 6-row tile, K not of 4,
  // N not of 16 nor of the 64-column chunk, K = 0, one row, batch dims; and
  // MiniLM's shapes (K 384 / 1536).
  const std::vector<std::pair<std::vector<int64_t>, int64_t>> shapes = {
      {{1, 1}, 1}, {{7, 5}, 17}, {{13, 66}, 33}, {{2, 3, 9}, 70}, {{4, 0}, 5}, {{1, 384}, 1536}, {{50, 1536}, 384},
      // K a multiple of 64 with 32-row tiles and rows / an odd block left
      // over: the AMX code where the CPU has it.
      {{2, 40, 128}, 40}, {{96, 64}, 64}};
  int i = 0;
  for (const auto& s : shapes)
    for (int sig = 0; sig < 4; ++sig, ++i) {
      // Zero-point forms cycle with the signedness, so each shape sees several.
      cases.push_back({s.first, s.second, (sig & 1) != 0, (sig & 2) != 0, i % 3 == 1, i % 2 == 1});
    }
  return cases;
}

TEST(Int8Matmul, PackedFunctionEqualsTheDefinition) {
  uint32_t seed = 1;
  for (const Case& c : Cases()) {
    Data d = Make(c, seed++);
    Tensor out = Zeros(OutShape(c), DType::Int32());
    ASSERT_TRUE(CallPacked("kiln.int8.matmul_integer", {d.a, d.b, d.za, d.zb, out}).ok()) << Name(c);
    EXPECT_EQ(Values<int32_t>(out), d.want) << Name(c);
  }
}

// Packs B as the compiler does and calls the prepacked form.
TEST(Int8Matmul, PrepackedFunctionEqualsTheDefinition) {
  uint32_t seed = 100;
  for (const Case& c : Cases()) {
    Data d = Make(c, seed++);
    const int64_t blocks = Int8Blocks(c.n), width = blocks * kInt8BlockN;
    Tensor bp = Zeros({blocks, Int8K4(d.k), 64}, DType::Int8());
    Tensor terms = Zeros({2, width}, DType::Int32());
    PackInt8B(d.b.raw_data(), !c.b_signed, d.k, c.n, bp.data<int8_t>(), terms.data<int32_t>());
    for (int64_t j = 0; j < c.n; ++j) {
      const uint8_t z = d.zb.data<uint8_t>()[c.zb_per_col ? j : 0];
      terms.data<int32_t>()[width + j] = c.b_signed ? int{static_cast<int8_t>(z)} : int{z} - 128;
    }
    Tensor out = Zeros(OutShape(c), DType::Int32());
    ASSERT_TRUE(CallPacked("kiln.int8.matmul_integer_packed", {d.a, bp, terms, d.za, out}).ok()) << Name(c);
    EXPECT_EQ(Values<int32_t>(out), d.want) << Name(c);
  }
}

// The vector code (AMX and AVX512-VNNI, where the CPU has them) and the
// portable loop on the core entry, threaded and not.
TEST(Int8Matmul, VectorAndPortableCodeAgreeOnAPool) {
  ::testing::Test::RecordProperty("avx512_vnni", CpuHasAvx512Vnni() ? "yes" : "no");
  ::testing::Test::RecordProperty("amx_int8", CpuHasAmxInt8() ? "yes" : "no");
  ThreadPool pool(3);
  uint32_t seed = 200;
  for (const Case& c : Cases()) {
    Data d = Make(c, seed++);
    std::vector<int8_t> packed(static_cast<size_t>(Int8PackedBytes(d.k, c.n)));
    std::vector<int32_t> colsum(static_cast<size_t>(Int8Blocks(c.n) * kInt8BlockN));
    PackInt8B(d.b.raw_data(), !c.b_signed, d.k, c.n, packed.data(), colsum.data());
    std::vector<int32_t> za, zb;
    for (int64_t i = 0; i < d.za.NumElements(); ++i) za.push_back(Value(d.za.data<uint8_t>()[i], c.a_signed) + (c.a_signed ? 128 : 0));
    for (int64_t i = 0; i < d.zb.NumElements(); ++i) zb.push_back(Value(d.zb.data<uint8_t>()[i], c.b_signed) - (c.b_signed ? 0 : 128));
    Int8MatmulProblem p;
    p.a = static_cast<const uint8_t*>(d.a.raw_data());
    p.a_signed = c.a_signed;
    p.rows = d.rows;
    p.m = d.m;
    p.k = p.lda = d.k;
    p.packed_b = packed.data();
    p.colsum = colsum.data();
    p.n = c.n;
    p.za = za.data();
    p.za_per_row = c.za_per_row;
    p.zb = zb.data();
    p.zb_per_col = c.zb_per_col;
    for (Int8Isa isa : {Int8Isa::kBest, Int8Isa::kAvx512Vnni, Int8Isa::kPortable}) {
      for (ThreadPool* on : {static_cast<ThreadPool*>(nullptr), &pool}) {
        std::vector<int32_t> out(d.want.size(), 12345);
        p.out = out.data();
        RunInt8Matmul(p, isa, on);
        EXPECT_EQ(out, d.want) << Name(c) << " isa " << static_cast<int>(isa) << (on ? " pool" : "");
      }
    }
  }
}

// All-extreme operands: sum_k (0 - 255)(-128 - 127) = 65025 K stays exact
// (vpmaddubsw's int16 pair sums would saturate at 2 * 255 * 127 > 32767).
TEST(Int8Matmul, ExtremesDoNotSaturate) {
  const int64_t k = 40;
  Tensor a = MakeTensor<uint8_t>({1, k}, std::vector<uint8_t>(k, 255), DType::UInt8());
  Tensor b = MakeTensor<int8_t>({k, 1}, std::vector<int8_t>(k, -128), DType::Int8());
  Tensor za = MakeTensor<uint8_t>({1}, {0}, DType::UInt8());
  Tensor zb = MakeTensor<int8_t>({1}, {127}, DType::Int8());
  Tensor out = Zeros({1, 1}, DType::Int32());
  ASSERT_TRUE(CallPacked("kiln.int8.matmul_integer", {a, b, za, zb, out}).ok());
  EXPECT_EQ(Values<int32_t>(out), std::vector<int32_t>{255 * -255 * static_cast<int32_t>(k)});
}

TEST(Int8Matmul, ReportsBadArguments) {
  Tensor a = Zeros({2, 3}, DType::UInt8());
  Tensor b = Zeros({3, 4}, DType::Int8());
  Tensor za = Zeros({1}, DType::UInt8());
  Tensor zb = Zeros({1}, DType::Int8());
  Tensor out = Zeros({2, 4}, DType::Int32());
  auto expect = [](Status s, const std::string& text) {
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_NE(s.message().find(text), std::string::npos) << s.message();
  };
  const char* f = "kiln.int8.matmul_integer";
  expect(CallPacked(f, {a, b, za, zb}), "expected 5 arguments");
  expect(CallPacked(f, {Zeros({2, 3}), b, za, zb, out}), "A must be uint8 or int8, got float32");
  expect(CallPacked(f, {a, Zeros({3, 4}), za, zb, out}), "B must be uint8 or int8, got float32");
  expect(CallPacked(f, {a, Zeros({3}, DType::Int8()), za, zb, out}), "B must have rank 2");
  expect(CallPacked(f, {Zeros({3}, DType::UInt8()), b, za, zb, out}), "A must have rank >= 2");
  expect(CallPacked(f, {a, Zeros({4, 4}, DType::Int8()), za, zb, out}), "A has K=3 but B has K=4");
  expect(CallPacked(f, {a, b, za, zb, Zeros({2, 5}, DType::Int32())}), "Out has shape");
  expect(CallPacked(f, {a, b, za, zb, Zeros({2, 4})}), "Out has dtype float32");
  expect(CallPacked(f, {a, b, zb, zb, out}), "a_zero_point has dtype int8, expected uint8");
  expect(CallPacked(f, {a, b, Zeros({3}, DType::UInt8()), zb, out}), "a_zero_point has 3 elements, expected 1 or M=2");
  expect(CallPacked(f, {a, b, za, za, out}), "b_zero_point has dtype uint8, expected int8");
  expect(CallPacked(f, {a, b, za, Zeros({3}, DType::Int8()), out}), "b_zero_point has 3 elements, expected 1 or N=4");
  const char* g = "kiln.int8.matmul_integer_packed";
  Tensor bp = Zeros({1, 1, 64}, DType::Int8());
  Tensor terms = Zeros({2, 16}, DType::Int32());
  ASSERT_TRUE(CallPacked(g, {a, bp, terms, za, out}).ok());
  expect(CallPacked(g, {a, Zeros({1, 2, 64}, DType::Int8()), terms, za, out}), "Bp has shape");
  expect(CallPacked(g, {a, Zeros({1, 1, 64}, DType::UInt8()), terms, za, out}), "Bp has dtype uint8");
  expect(CallPacked(g, {a, bp, Zeros({2, 32}, DType::Int32()), za, out}), "Bterms has shape");
  expect(CallPacked(g, {a, bp, Zeros({2, 16}), za, out}), "Bterms has dtype float32");
  expect(CallPacked(g, {a, bp, terms, za, Zeros({4}, DType::Int32())}), "Out must have rank >= 2");
}

}  // namespace
}  // namespace kernels
}  // namespace kiln
