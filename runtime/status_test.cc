#include "runtime/status.h"

#include <gtest/gtest.h>

#include <string>

#include "runtime/dtype.h"

namespace kiln {
namespace {

TEST(StatusTest, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.message(), "");
  EXPECT_EQ(s.ToString(), "OK");
  EXPECT_TRUE(Status::Ok().ok());
}

TEST(StatusTest, ConstructingWithOkCodeIsOk) {
  Status s(StatusCode::kOk, "ignored");
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.message(), "");
}

TEST(StatusTest, ErrorCarriesCodeAndMessage) {
  Status s = NotFound("no function 'f'");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "no function 'f'");
  EXPECT_EQ(s.ToString(), "NotFound: no function 'f'");
}

TEST(StatusTest, EveryHelperHasItsCode) {
  EXPECT_EQ(InvalidArgument("x").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(NotFound("x").code(), StatusCode::kNotFound);
  EXPECT_EQ(OutOfRange("x").code(), StatusCode::kOutOfRange);
  EXPECT_EQ(DataLoss("x").code(), StatusCode::kDataLoss);
  EXPECT_EQ(Unimplemented("x").code(), StatusCode::kUnimplemented);
  EXPECT_EQ(FailedPrecondition("x").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(ResourceExhausted("x").code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(Internal("x").code(), StatusCode::kInternal);
  EXPECT_EQ(Incompatible("x").code(), StatusCode::kIncompatible);
  EXPECT_STREQ(StatusCodeName(StatusCode::kIncompatible), "Incompatible");
  EXPECT_STREQ(StatusCodeName(StatusCode::kDataLoss), "DataLoss");
}

TEST(StatusTest, AnnotatePrefixesContext) {
  Status s = DataLoss("truncated");
  s.Annotate("loading a.vmfb").Annotate("session");
  EXPECT_EQ(s.message(), "session: loading a.vmfb: truncated");
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
}

TEST(StatusTest, AnnotateOnOkIsNoOp) {
  Status s;
  s.Annotate("context");
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.message(), "");
}

TEST(StatusTest, CopyIsIndependent) {
  Status a = InvalidArgument("a");
  Status b = a;
  b.Annotate("ctx");
  EXPECT_EQ(a.message(), "a");
  EXPECT_EQ(b.message(), "ctx: a");
  Status c;
  c = a;
  EXPECT_EQ(c.code(), StatusCode::kInvalidArgument);
  c = Status();
  EXPECT_TRUE(c.ok());
}

TEST(StatusTest, MoveTransfers) {
  Status a = Internal("boom");
  Status b = std::move(a);
  EXPECT_EQ(b.code(), StatusCode::kInternal);
  EXPECT_EQ(b.message(), "boom");
  Status c;
  c = std::move(b);
  EXPECT_EQ(c.message(), "boom");
}

TEST(StatusTest, StrFormat) {
  EXPECT_EQ(StrFormat("%d-%s", 7, "x"), "7-x");
  EXPECT_EQ(StrFormat("%s", ""), "");
  std::string long_arg(1000, 'z');
  EXPECT_EQ(StrFormat("<%s>", long_arg.c_str()).size(), 1002u);
}

Status FailIf(bool fail) { return fail ? InvalidArgument("bad") : Status::Ok(); }

Status UsesReturnIfError(bool fail, int* reached) {
  KILN_RETURN_IF_ERROR(FailIf(fail));
  ++*reached;
  return Status::Ok();
}

Status UsesReturnIfErrorCtx(bool fail, int index) {
  KILN_RETURN_IF_ERROR_CTX(FailIf(fail), "argument %d", index);
  return Status::Ok();
}

TEST(StatusMacrosTest, ReturnIfError) {
  int reached = 0;
  EXPECT_TRUE(UsesReturnIfError(false, &reached).ok());
  EXPECT_EQ(reached, 1);
  Status s = UsesReturnIfError(true, &reached);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(reached, 1);
}

TEST(StatusMacrosTest, ReturnIfErrorCtxAnnotates) {
  EXPECT_TRUE(UsesReturnIfErrorCtx(false, 3).ok());
  Status s = UsesReturnIfErrorCtx(true, 3);
  EXPECT_EQ(s.message(), "argument 3: bad");
}

Result<int> MakeInt(bool fail) {
  if (fail) return OutOfRange("too big");
  return 42;
}

Result<int> Doubled(bool fail) {
  KILN_ASSIGN_OR_RETURN(int v, MakeInt(fail));
  return v * 2;
}

TEST(ResultTest, ValueAndError) {
  Result<int> ok = MakeInt(false);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 42);
  EXPECT_TRUE(ok.status().ok());
  Result<int> bad = MakeInt(true);
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(bad.TakeStatus().message(), "too big");
}

TEST(ResultTest, AssignOrReturn) {
  Result<int> r = Doubled(false);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value(), 84);
  Result<int> e = Doubled(true);
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(e.status().message(), "too big");
}

TEST(ResultTest, OkStatusWithoutValueBecomesInternal) {
  Result<int> r{Status::Ok()};
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
}

TEST(ResultTest, CopyAndMoveNonTrivialValue) {
  Result<std::string> a = std::string("hello");
  Result<std::string> b = a;
  EXPECT_EQ(*a, "hello");
  EXPECT_EQ(*b, "hello");
  Result<std::string> c = std::move(b);
  EXPECT_EQ(*c, "hello");
  EXPECT_EQ(c->size(), 5u);
  // Assign an error over a value and a value over an error.
  c = Result<std::string>(NotFound("gone"));
  EXPECT_FALSE(c.ok());
  c = a;
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, "hello");
  std::string moved = std::move(c).value();
  EXPECT_EQ(moved, "hello");
}

TEST(ResultTest, MoveOnlyValue) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(5);
  ASSERT_TRUE(r.ok());
  std::unique_ptr<int> p = std::move(r).value();
  EXPECT_EQ(*p, 5);
}

TEST(DTypeTest, ParseNames) {
  struct Case { const char* text; DType want; };
  const Case cases[] = {
      {"float32", DType::Float32()}, {"f32", DType::Float32()},   {"float64", DType::Float64()},
      {"f16", DType::Float16()},     {"int64", DType::Int64()},   {"i32", DType::Int32()},
      {"int8", DType::Int8()},       {"uint8", DType::UInt8()},   {"u8", DType::UInt8()},
      {"bool", DType::Bool()},       {"<f4", DType::Float32()},   {"<f8", DType::Float64()},
      {"<i8", DType::Int64()},       {"|u1", DType::UInt8()},     {"|i1", DType::Int8()},
      {"bfloat16", DType{kDLBfloat, 16, 1}}, {"float32x4", DType{kDLFloat, 32, 4}},
  };
  for (const Case& c : cases) {
    Result<DType> r = ParseDType(c.text);
    ASSERT_TRUE(r.ok()) << c.text << ": " << r.status().ToString();
    EXPECT_EQ(*r, c.want) << c.text;
  }
}

TEST(DTypeTest, ParseErrors) {
  for (const char* bad : {"", "float", "f", "complex64", "int0", "float32x", "float32y", "<x4", "int999", "float33", "int7", "bfloat32"}) {
    Result<DType> r = ParseDType(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
      EXPECT_NE(r.status().message().find("unknown dtype"), std::string::npos);
    }
  }
}

TEST(DTypeTest, ToStringRoundTrips) {
  for (DType t : {DType::Float32(), DType::Float64(), DType::Float16(), DType::Int64(), DType::Int32(),
                  DType::Int8(), DType::UInt8(), DType::Bool(), DType{kDLFloat, 32, 8}}) {
    Result<DType> back = ParseDType(DTypeToString(t));
    ASSERT_TRUE(back.ok()) << DTypeToString(t);
    EXPECT_EQ(*back, t);
  }
  EXPECT_EQ(DTypeToString(DType::Float32()), "float32");
  EXPECT_EQ(DTypeToString(DType::Bool()), "bool");
  EXPECT_EQ(DTypeToString(DType{kDLFloat, 32, 4}), "float32x4");
}

TEST(DTypeTest, BytesAndKinds) {
  EXPECT_EQ(DType::Float32().bytes(), 4u);
  EXPECT_EQ(DType::Float64().bytes(), 8u);
  EXPECT_EQ(DType::Bool().bytes(), 1u);
  EXPECT_EQ((DType{kDLFloat, 32, 4}).bytes(), 16u);
  EXPECT_TRUE(DType::Float16().is_float());
  EXPECT_FALSE(DType::Int8().is_float());
  EXPECT_TRUE(DType::UInt8().is_int());
  EXPECT_EQ(DType::FromDL(DType::Int32().dl()), DType::Int32());
}

}  // namespace
}  // namespace kiln
