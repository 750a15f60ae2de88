#include "runtime/any.h"

#include <gtest/gtest.h>

#include <vector>

namespace kiln {
namespace {

TEST(AnyTest, NoneByDefault) {
  Any a;
  EXPECT_TRUE(a.is_none());
  EXPECT_EQ(a.kind(), AnyKind::kNone);
  EXPECT_EQ(a.Describe(), "none");
}

TEST(AnyTest, Scalars) {
  Any i(int64_t{-5});
  EXPECT_TRUE(i.is_int());
  EXPECT_EQ(i.int_value(), -5);
  EXPECT_EQ(i.Describe(), "int -5");
  Any small(3);
  EXPECT_EQ(small.int_value(), 3);
  Any b(true);
  EXPECT_TRUE(b.is_int());
  EXPECT_EQ(b.int_value(), 1);
  Any f(2.5);
  EXPECT_TRUE(f.is_float());
  EXPECT_EQ(f.float_value(), 2.5);
  EXPECT_EQ(f.Describe(), "float 2.500000");
}

TEST(AnyTest, String) {
  Any s("hello");
  EXPECT_TRUE(s.is_string());
  EXPECT_EQ(s.string_value(), "hello");
  EXPECT_EQ(s.Describe(), "string \"hello\"");
  Any s2(std::string("x"));
  EXPECT_EQ(s2.kind(), AnyKind::kString);
}

TEST(AnyTest, TensorSharesStorage) {
  std::vector<int64_t> shape = {2, 3};
  Result<Tensor> t = Tensor::Empty(shape, DType::Float32());
  ASSERT_TRUE(t.ok());
  Any a(*t);
  EXPECT_TRUE(a.is_tensor());
  EXPECT_EQ(a.tensor().raw_data(), t->raw_data());
  EXPECT_EQ(a.tensor_obj(), t->object().get());
  EXPECT_EQ(a.Describe(), "tensor float32[2, 3]");
  // Copying an Any copies the reference.
  Any copy = a;
  EXPECT_EQ(copy.tensor().raw_data(), t->raw_data());
  // An undefined tensor becomes None.
  EXPECT_TRUE(Any(Tensor()).is_none());
}

TEST(AnyTest, Shape) {
  Any s = Any::Shape({1, 784});
  EXPECT_TRUE(s.is_shape());
  EXPECT_EQ(s.shape_dims(), (std::vector<int64_t>{1, 784}));
  EXPECT_EQ(s.Describe(), "shape [1, 784]");
}

TEST(AnyTest, Tuple) {
  Any t = Any::Tuple({Any(1), Any("a"), Any::Shape({2})});
  EXPECT_TRUE(t.is_tuple());
  ASSERT_EQ(t.tuple_fields().size(), 3u);
  EXPECT_EQ(t.tuple_fields()[0].int_value(), 1);
  EXPECT_EQ(t.tuple_fields()[1].string_value(), "a");
  EXPECT_TRUE(t.tuple_fields()[2].is_shape());
  EXPECT_EQ(t.Describe(), "tuple of 3");
}

TEST(AnyTest, FunctionCalls) {
  Any fn = Any::Function("add1", [](Span<const Any> args, Any* ret) -> Status {
    KILN_ASSIGN_OR_RETURN(int64_t v, args[0].AsInt());
    *ret = Any(v + 1);
    return Status::Ok();
  });
  EXPECT_TRUE(fn.is_function());
  EXPECT_EQ(fn.function().name, "add1");
  EXPECT_EQ(fn.Describe(), "function add1");
  std::vector<Any> args = {Any(41)};
  Any ret;
  ASSERT_TRUE(fn.function().fn(args, &ret).ok());
  EXPECT_EQ(ret.int_value(), 42);
  std::vector<Any> bad = {Any("x")};
  Status s = fn.function().fn(bad, &ret);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
}

TEST(AnyTest, FromObjectRecoversKind) {
  EXPECT_TRUE(Any::FromObject(nullptr).is_none());
  Any s("x");
  EXPECT_TRUE(Any::FromObject(s.object()).is_string());
  Any sh = Any::Shape({3});
  EXPECT_TRUE(Any::FromObject(sh.object()).is_shape());
  Any tu = Any::Tuple({});
  EXPECT_TRUE(Any::FromObject(tu.object()).is_tuple());
  Any fn = Any::Function("f", [](Span<const Any>, Any*) { return Status::Ok(); });
  EXPECT_TRUE(Any::FromObject(fn.object()).is_function());
  std::vector<int64_t> shape = {1};
  Result<Tensor> t = Tensor::Empty(shape, DType::Int8());
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(Any::FromObject(t->object()).is_tensor());
  struct Opaque : Object {
    Opaque() : Object(ObjectKind::kOpaque) {}
  };
  Any op = Any::FromObject(std::make_shared<Opaque>());
  EXPECT_EQ(op.kind(), AnyKind::kOpaque);
  EXPECT_EQ(op.Describe(), "object");
}

TEST(AnyTest, CheckedAccessorsSucceed) {
  EXPECT_EQ(*Any(7).AsInt(), 7);
  EXPECT_EQ(*Any(1.5).AsFloat(), 1.5);
  EXPECT_EQ(*Any(2).AsFloat(), 2.0);  // ints widen to float
  std::vector<int64_t> shape = {2};
  Result<Tensor> t = Tensor::Empty(shape, DType::Float32());
  ASSERT_TRUE(t.ok());
  Result<Tensor> back = Any(*t).AsTensor();
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->raw_data(), t->raw_data());
}

TEST(AnyTest, CheckedAccessorsErrors) {
  Result<int64_t> i = Any(1.5).AsInt();
  ASSERT_FALSE(i.ok());
  EXPECT_EQ(i.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(i.status().message(), "expected an int, got float 1.500000");

  Result<double> f = Any("s").AsFloat();
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().message(), "expected a float, got string \"s\"");

  Result<Tensor> t = Any::Shape({1, 2}).AsTensor();
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(), "expected a tensor, got shape [1, 2]");

  Result<Tensor> none = Any().AsTensor();
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message(), "expected a tensor, got none");
}

TEST(AnyTest, KindNames) {
  EXPECT_STREQ(AnyKindName(AnyKind::kNone), "none");
  EXPECT_STREQ(AnyKindName(AnyKind::kInt), "int");
  EXPECT_STREQ(AnyKindName(AnyKind::kFloat), "float");
  EXPECT_STREQ(AnyKindName(AnyKind::kString), "string");
  EXPECT_STREQ(AnyKindName(AnyKind::kTensor), "tensor");
  EXPECT_STREQ(AnyKindName(AnyKind::kShape), "shape");
  EXPECT_STREQ(AnyKindName(AnyKind::kTuple), "tuple");
  EXPECT_STREQ(AnyKindName(AnyKind::kFunction), "function");
  EXPECT_STREQ(AnyKindName(AnyKind::kOpaque), "object");
}

}  // namespace
}  // namespace kiln
