#include <gtest/gtest.h>

#include "compiler/text/text.h"

namespace kiln {
namespace text {
namespace {

using ir::IntImm;
using ir::MakeBinary;
using ir::TirKind;

TEST(PrinterTest, PrimExprPrecedenceAndLiterals) {
  ir::PrimExpr n = ir::PrimExpr(ir::MakeVar("n"));
  ir::PrimExpr e = n * 4 + 1;
  EXPECT_EQ(PrintPrimExpr(e), "n * 4 + 1");
  EXPECT_EQ(PrintPrimExpr(n * (n + 1)), "n * (n + 1)");
  EXPECT_EQ(PrintPrimExpr(n - (n - 2)), "n - (n - 2)");
  EXPECT_EQ(PrintPrimExpr(MakeBinary(TirKind::kFloorDiv, n, 2)), "n // 2");
  // An int32 literal beside an int64 variable would read back as int64: typed.
  EXPECT_EQ(PrintPrimExpr(MakeBinary(TirKind::kAdd, n, IntImm(DType::Int32(), 3))), "n + T.int32(3)");
  EXPECT_EQ(PrintPrimExpr(ir::FloatImm(DType::Float32(), 0)), "T.float32(0)");
  EXPECT_EQ(PrintPrimExpr(ir::FloatImm(DType::Float32(), 0.5)), "T.float32(0.5)");
  EXPECT_EQ(PrintPrimExpr(MakeBinary(TirKind::kMax, ir::FloatImm(DType::Float32(), 0), ir::FloatImm(DType::Float32(), 1))),
            "T.max(T.float32(0), T.float32(1))");
  ir::PrimExpr i = ir::PrimExpr(ir::MakeVar("i", DType::Int32()));
  EXPECT_EQ(PrintPrimExpr(MakeBinary(TirKind::kLT, i, IntImm(DType::Int32(), 8))), "i < 8");
}

TEST(PrinterTest, StructInfo) {
  ir::PrimExpr n = ir::PrimExpr(ir::MakeVar("n"));
  EXPECT_EQ(PrintStructInfo(ir::MakeTensorSInfo({n, 784}, DType::Float32())), "R.Tensor((n, 784), dtype=\"float32\")");
  EXPECT_EQ(PrintStructInfo(ir::MakeTensorSInfo({128}, DType::Float32())), "R.Tensor((128,), dtype=\"float32\")");
  EXPECT_EQ(PrintStructInfo(ir::MakeTensorSInfoNdim(2, DType::Int64())), "R.Tensor(ndim=2, dtype=\"int64\")");
  EXPECT_EQ(PrintStructInfo(std::make_shared<ir::ShapeSInfo>(true, std::vector<ir::PrimExpr>{n, 4}, -1)),
            "R.Shape([n, 4])");
  EXPECT_EQ(PrintStructInfo(std::make_shared<ir::TupleSInfo>(std::vector<ir::StructInfo>{
                std::make_shared<ir::ObjectSInfo>(), std::make_shared<ir::PrimSInfo>(DType::Int64())})),
            "R.Tuple(R.Object, R.Prim(\"int64\"))");
}

}  // namespace
}  // namespace text
}  // namespace kiln
