// The VM on device memory, without a GPU: a context whose allocator hands
// out memory the host cannot address (runtime/fake_device_memory.h: any
// host access faults) runs the builtins that read or write tensor values on
// the host (tensor_to_shape, shape_to_tensor, to_bool, vm.builtin.loop's
// trip count, conditions, iteration scalars, scan slices and stacking)
// through the device's copies; each read from the device is a copy that
// waits for the device, counted here. Host inputs are copied to the device
// at the call boundary; results stay on the device.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "runtime/fake_device_memory.h"
#include "tests/e2e/e2e_util.h"

namespace kiln {
namespace e2e {
namespace {

const char* kSource = R"(# from tvm.script import ir as I
# from tvm.script import tir as T
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function(private=True)
    def keep(i: R.Tensor((), dtype="int64"), c: R.Tensor((), dtype="bool"), s: R.Tensor((2,), dtype="int64")) -> R.Tuple(R.Tensor((), dtype="bool"), R.Tensor((2,), dtype="int64")):
        r = (c, s)
        return r

    @R.function(private=True)
    def rows(s: R.Tensor((2,), dtype="int64"), row: R.Tensor((3,), dtype="int64")) -> R.Tuple(R.Tensor((2,), dtype="int64"), R.Tensor((3,), dtype="int64")):
        r = (s, row)
        return r

    @R.function
    def shapes(x: R.Tensor((2,), dtype="int64")) -> R.Tensor((2,), dtype="int64"):
        a = T.int64()
        b = T.int64()
        s = R.tensor_to_shape(x)
        m = R.match_cast(s, R.Shape([a, b]))
        t = R.shape_to_tensor(R.shape([b, a + 1]))
        return t

    @R.function
    def choose(c: R.Tensor((), dtype="bool"), x: R.Tensor((2,), dtype="int64"), y: R.Tensor((2,), dtype="int64")) -> R.Tensor((2,), dtype="int64"):
        if c:
            r = x
        else:
            r = y
        return r

    @R.function
    def counted(m: R.Tensor((), dtype="int64"), x: R.Tensor((2,), dtype="int64")) -> R.Tuple(R.Tensor((2,), dtype="int64")):
        cls = Module
        r = R.call_packed("vm.builtin.loop", cls.keep, R.prim_value(6), R.prim_value(1), R.prim_value(0), R.prim_value(0), m, R.prim_value(1), x, sinfo_args=(R.Tuple(R.Tensor((2,), dtype="int64")),))
        return r

    @R.function
    def scan(x: R.Tensor((2,), dtype="int64"), rows: R.Tensor(("n", 3), dtype="int64")) -> R.Tuple(R.Tensor((2,), dtype="int64"), R.Tensor(ndim=2, dtype="int64")):
        cls = Module
        r = R.call_packed("vm.builtin.loop", cls.rows, R.prim_value(1), R.prim_value(1), R.prim_value(1), R.prim_value(1), R.prim_value(0), R.prim_value(0), R.shape([3]), R.prim_value(0), R.prim_value(64), R.prim_value(1), x, rows, sinfo_args=(R.Tuple(R.Tensor((2,), dtype="int64"), R.Tensor(ndim=2, dtype="int64")),))
        return r
)";

Tensor Ints(std::vector<int64_t> shape, std::vector<int64_t> values) {
  Tensor t = Tensor::Empty(shape, DType::Int64()).value();
  for (size_t i = 0; i < values.size(); ++i) t.data<int64_t>()[i] = values[i];
  return t;
}

Tensor Bool0d(bool v) {
  Tensor t = Tensor::Empty(Span<const int64_t>(), DType::Bool()).value();
  *t.data<uint8_t>() = v ? 1 : 0;
  return t;
}

// The values of a result (on the fake device) read back through its copy.
std::vector<int64_t> Values(FakeDeviceMemory& dev, const Any& v) {
  EXPECT_TRUE(v.is_tensor()) << v.Describe();
  if (!v.is_tensor()) return {};
  Tensor t = v.tensor();
  EXPECT_EQ(t.dl()->device.device_type, kDLCUDA);
  EXPECT_TRUE(dev.Contains(t.raw_data()));
  std::vector<int64_t> out(static_cast<size_t>(t.NumElements()));
  EXPECT_TRUE(dev.CopyToHost(out.data(), t.raw_data(), out.size() * 8).ok());
  return out;
}

struct DeviceContext {
  std::shared_ptr<FakeDeviceMemory> dev = std::make_shared<FakeDeviceMemory>();
  std::unique_ptr<vm::Context> ctx;
};

DeviceContext Open(const std::shared_ptr<const vm::Module>& module) {
  DeviceContext d;
  vm::ContextOptions options;
  options.shared_allocator = d.dev;
  Result<std::unique_ptr<vm::Context>> ctx = module->CreateContext(options);
  EXPECT_TRUE(ctx.ok()) << ctx.status().ToString();
  if (ctx.ok()) d.ctx = std::move(ctx).value();
  return d;
}

class DeviceMemoryE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = CompileAndLoad(kSource, "device_memory.relax");
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    module_ = std::move(m).value();
  }
  std::shared_ptr<const vm::Module> module_;
};

TEST_F(DeviceMemoryE2E, ShapeValuesAreCopiedOutAndIn) {
  DeviceContext d = Open(module_);
  ASSERT_NE(d.ctx, nullptr);
  Any result;
  std::vector<Any> args = {Ints({2}, {4, 7})};
  Status s = d.ctx->Invoke("shapes", args, &result);
  ASSERT_TRUE(s.ok()) << s.ToString();
  // The input copied in (1), the shape tensor written (1); the shape read
  // back to the host (1): the copy that waits for the device.
  EXPECT_EQ(d.dev->from_host(), 2);
  EXPECT_EQ(d.dev->to_host(), 1);
  EXPECT_EQ(Values(*d.dev, result), (std::vector<int64_t>{7, 5}));
}

TEST_F(DeviceMemoryE2E, DeviceInputsPassAsTheyAre) {
  DeviceContext d = Open(module_);
  ASSERT_NE(d.ctx, nullptr);
  Tensor x = Tensor::Empty(std::vector<int64_t>{2}, DType::Int64(), d.dev.get()).value();
  const int64_t v[2] = {3, 2};
  ASSERT_TRUE(d.dev->CopyFromHost(x.raw_data(), v, sizeof(v)).ok());
  Any result;
  std::vector<Any> args = {x};
  ASSERT_TRUE(d.ctx->Invoke("shapes", args, &result).ok());
  EXPECT_EQ(d.dev->from_host(), 2);  // ours and the shape tensor's: no boundary copy
  EXPECT_EQ(Values(*d.dev, result), (std::vector<int64_t>{2, 4}));
}

TEST_F(DeviceMemoryE2E, IfConditionIsReadThroughACopy) {
  DeviceContext d = Open(module_);
  ASSERT_NE(d.ctx, nullptr);
  for (bool c : {true, false}) {
    Any result;
    std::vector<Any> args = {Bool0d(c), Ints({2}, {1, 2}), Ints({2}, {3, 4})};
    ASSERT_TRUE(d.ctx->Invoke("choose", args, &result).ok());
    EXPECT_EQ(Values(*d.dev, result), c ? (std::vector<int64_t>{1, 2}) : (std::vector<int64_t>{3, 4}));
  }
  EXPECT_EQ(d.dev->to_host(), 2 + 2);  // one condition per call (+ our two reads)
}

TEST_F(DeviceMemoryE2E, LoopReadsItsTripCountAndConditions) {
  DeviceContext d = Open(module_);
  ASSERT_NE(d.ctx, nullptr);
  Any result;
  std::vector<Any> args = {Ints({}, {3}), Ints({2}, {5, 6})};
  Status s = d.ctx->Invoke("counted", args, &result);
  ASSERT_TRUE(s.ok()) << s.ToString();
  // Reads: the trip count, then the body's condition after each of the 3
  // iterations. Writes: 2 inputs, then the iteration and condition scalars
  // of each iteration.
  EXPECT_EQ(d.dev->to_host(), 1 + 3);
  EXPECT_EQ(d.dev->from_host(), 2 + 2 * 3);
  ASSERT_TRUE(result.is_tuple());
  EXPECT_EQ(Values(*d.dev, result.tuple_fields()[0]), (std::vector<int64_t>{5, 6}));
}

TEST_F(DeviceMemoryE2E, ScanSlicesAndStacksOnTheDevice) {
  DeviceContext d = Open(module_);
  ASSERT_NE(d.ctx, nullptr);
  Any result;
  std::vector<Any> args = {Ints({2}, {1, 2}), Ints({3, 3}, {10, 11, 12, 20, 21, 22, 30, 31, 32})};
  Status s = d.ctx->Invoke("scan", args, &result);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(d.dev->to_host(), 0);  // nothing read on the host
  // Rows 1 and 2 start off 64-byte boundaries (24, 48): copied on the
  // device; the three rows stacked: three more device copies.
  EXPECT_EQ(d.dev->within(), 2 + 3);
  ASSERT_TRUE(result.is_tuple());
  EXPECT_EQ(Values(*d.dev, result.tuple_fields()[1]), (std::vector<int64_t>{10, 11, 12, 20, 21, 22, 30, 31, 32}));
}

TEST_F(DeviceMemoryE2E, ArgumentOnAnotherDeviceIsRefused) {
  DeviceContext d = Open(module_);
  ASSERT_NE(d.ctx, nullptr);
  FakeDeviceMemory other(1 << 16, DLDevice{kDLCUDA, 1});
  Tensor x = Tensor::Empty(std::vector<int64_t>{2}, DType::Int64(), &other).value();
  Any result;
  std::vector<Any> args = {x};
  Status s = d.ctx->Invoke("shapes", args, &result);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "shapes: argument 0 is on cuda:1, but this call runs on cuda:0");
}

// A CPU context refuses a device tensor at the boundary: its kernels (and
// builtins) would read a device address on the host.
TEST_F(DeviceMemoryE2E, DeviceTensorInACpuContextIsAnError) {
  auto ctx = module_->CreateContext();
  FakeDeviceMemory dev;
  Tensor x = Tensor::Empty(std::vector<int64_t>{2}, DType::Int64(), &dev).value();
  Any result;
  std::vector<Any> args = {x};
  Status s = ctx->Invoke("shapes", args, &result);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "shapes: argument 0 is on cuda:0, but this call runs on the CPU");
}

}  // namespace
}  // namespace e2e
}  // namespace kiln
