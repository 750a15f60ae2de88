// Unit tests of the ONNX importer: what the graph becomes in Relax (printed
// text), symbolic dims, shape folding, and every kind of import error.
#include "compiler/onnx/onnx_importer.h"

#include <gtest/gtest.h>

#include <climits>
#include <map>
#include <set>

#include "compiler/onnx/onnx_model_builder.h"
#include "compiler/onnx/onnx_tensor.h"
#include "compiler/text/text.h"

namespace kiln {
namespace onnx {
namespace {

using ::onnx::TensorProto;

Result<ir::IRModule> Import(const OnnxModelBuilder& m, ImportOptions options = {}) {
  std::string bytes = m.Serialize();
  return ImportBuffer(bytes.data(), bytes.size(), ".", options);
}

std::string Text(const ir::IRModule& mod) { return text::PrintModule(mod); }

TEST(OnnxImporter, ParamsAreNonInitializerInputsAndResultIsTheOutput) {
  OnnxModelBuilder m(13);
  m.Input("x", TensorProto::FLOAT, {2, 4});
  m.Initializer("w", {4, 3}, std::vector<float>(12, 0.5f));
  m.Input("w", TensorProto::FLOAT, {4, 3});  // an initializer listed as input (IR < 4) stays a constant
  m.Node("MatMul", {"x", "w"}, {"y"});
  m.Output("y");
  auto mod = Import(m);
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  ir::Function f = mod->FindRelax("main");
  ASSERT_TRUE(f);
  ASSERT_EQ(f->params.size(), 1u);
  EXPECT_EQ(f->params[0]->name, "x");
  std::string t = Text(*mod);
  EXPECT_NE(t.find("R.matmul"), std::string::npos) << t;
  EXPECT_NE(t.find("R.Tensor((2, 3), dtype=\"float32\")"), std::string::npos) << t;
}

TEST(OnnxImporter, SeveralOutputsGiveATuple) {
  OnnxModelBuilder m(13);
  m.Input("x", TensorProto::FLOAT, {3});
  m.Node("Relu", {"x"}, {"a"});
  m.Node("Neg", {"x"}, {"b"});
  m.Output("a");
  m.Output("b");
  auto mod = Import(m);
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  ir::Function f = mod->FindRelax("main");
  EXPECT_TRUE(ir::SInfoAs<ir::TupleSInfo>(f->ret_sinfo ? f->ret_sinfo : f->body->struct_info)) << Text(*mod);
}

TEST(OnnxImporter, DimParamsBecomeSymbolicVarsAndFixedDimsReplaceThem) {
  OnnxModelBuilder m(13);
  m.Input("x", TensorProto::FLOAT, {"batch", 4});
  m.Node("Relu", {"x"}, {"y"});
  m.Output("y");
  auto mod = Import(m);
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  EXPECT_NE(Text(*mod).find("R.Tensor((batch, 4)"), std::string::npos) << Text(*mod);
  ImportOptions fixed;
  fixed.fixed_dims["batch"] = 8;
  auto mod2 = Import(m, fixed);
  ASSERT_TRUE(mod2.ok()) << mod2.status().ToString();
  EXPECT_NE(Text(*mod2).find("R.Tensor((8, 4)"), std::string::npos) << Text(*mod2);
}

TEST(OnnxImporter, NamesBecomeIdentifiersOfTheTextForm) {
  OnnxModelBuilder m(13);
  m.Input("input.1", TensorProto::FLOAT, {"batch size", 2});
  m.Input("input_1", TensorProto::FLOAT, {"batch size", 2});
  m.Input("0", TensorProto::FLOAT, {"batch size", 2});
  m.Node("Sum", {"input.1", "input_1", "0"}, {"y"});
  m.Output("y");
  auto mod = Import(m);
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  std::string t = Text(*mod);
  EXPECT_NE(t.find("def main(input_1: R.Tensor((\"batch_size\", 2)"), std::string::npos) << t;
  EXPECT_NE(t.find("input_1_1: R.Tensor"), std::string::npos) << t;
  EXPECT_NE(t.find("v0: R.Tensor"), std::string::npos) << t;
  ImportOptions fixed;
  fixed.fixed_dims["batch size"] = 3;  // fixed dims use the model's own names
  auto mod2 = Import(m, fixed);
  ASSERT_TRUE(mod2.ok()) << mod2.status().ToString();
  EXPECT_NE(Text(*mod2).find("R.Tensor((3, 2)"), std::string::npos);
}

TEST(OnnxImporter, UnknownInputDimsBecomeFreshSymbolicVars) {
  // -1, 0, "?" and a dim with neither field are each a variable of their own,
  // named after the input and the position; a dim_param that already has the
  // fresh name keeps it and the fresh one moves aside.
  OnnxModelBuilder m(13);
  m.Input("x", TensorProto::FLOAT, {-1, 0, "?", OnnxDim::Unknown(), 4});
  m.Input("input.1", TensorProto::FLOAT, {"input_1_dim0", OnnxDim::Unknown()});
  m.Node("Relu", {"x"}, {"y"});
  m.Node("Relu", {"input.1"}, {"z"});
  m.Output("y");
  m.Output("z");
  auto mod = Import(m);
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  std::string t = Text(*mod);
  EXPECT_NE(t.find("x: R.Tensor((\"x_dim0\", \"x_dim1\", \"x_dim2\", \"x_dim3\", 4), dtype=\"float32\")"), std::string::npos) << t;
  EXPECT_NE(t.find("input_1: R.Tensor((\"input_1_dim0\", \"input_1_dim1\"), dtype=\"float32\")"), std::string::npos) << t;
  ir::Function f = mod->FindRelax("main");
  ASSERT_EQ(f->params.size(), 2u);
  const auto* x = ir::SInfoAs<ir::TensorSInfo>(f->params[0]->struct_info);
  ASSERT_TRUE(x && x->has_shape);
  std::set<const ir::VarNode*> vars;
  for (int i = 0; i < 4; ++i) vars.insert(x->shape[i].as<ir::VarNode>());
  vars.erase(nullptr);
  EXPECT_EQ(vars.size(), 4u) << t;
}

TEST(OnnxImporter, FixedDimsPinByNameAndByInputAndPosition) {
  OnnxModelBuilder m(13);
  m.Input("x", TensorProto::FLOAT, {-1, 5, OnnxDim::Unknown()});
  m.Input("y", TensorProto::FLOAT, {"batch", "?"});
  m.Node("Relu", {"x"}, {"a"});
  m.Node("Relu", {"y"}, {"b"});
  m.Output("a");
  m.Output("b");
  ImportOptions fixed;
  fixed.fixed_dims["x:2"] = 48;     // by input and position
  fixed.fixed_dims["x_dim0"] = 3;   // by the fresh name
  fixed.fixed_dims["x:1"] = 5;      // a static dim given its own value
  fixed.fixed_dims["y:0"] = 2;      // a dim_param by position pins the name
  fixed.fixed_dims["batch"] = 2;    // and by name, agreeing
  fixed.fixed_dims["y_dim1"] = 7;
  auto mod = Import(m, fixed);
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  std::string t = Text(*mod);
  EXPECT_NE(t.find("x: R.Tensor((3, 5, 48), dtype=\"float32\")"), std::string::npos) << t;
  EXPECT_NE(t.find("y: R.Tensor((2, 7), dtype=\"float32\")"), std::string::npos) << t;
}

TEST(OnnxImporter, BadFixedDimsAreErrors) {
  OnnxModelBuilder m(13);
  m.Input("x", TensorProto::FLOAT, {"batch", 4, -1});
  m.Node("Relu", {"x"}, {"y"});
  m.Output("y");
  struct Case {
    std::map<std::string, int64_t> dims;
    const char* message;
  };
  const Case cases[] = {
      {{{"seq", 8}},
       "fixed dimension \"seq\" names no symbolic dimension of the graph inputs (they have: batch, x_dim2); a "
       "dimension is also named by INPUT:POSITION"},
      {{{"w:0", 8}}, "fixed dimension \"w:0\": no graph input is named \"w\" (the inputs are: x)"},
      {{{"x:3", 8}}, "fixed dimension \"x:3\": input \"x\" has 3 dimensions (positions 0 to 2)"},
      {{{"x:1", 5}}, "fixed dimension \"x:1\" = 5: dimension 1 of input \"x\" is 4"},
      {{{"batch", 2}, {"x:0", 3}},
       "fixed dimension \"x:0\" = 3 contradicts fixed dimension \"batch\" = 2 (both are \"batch\")"},
  };
  for (const Case& c : cases) {
    ImportOptions options;
    options.fixed_dims = c.dims;
    auto mod = Import(m, options);
    ASSERT_FALSE(mod.ok()) << c.message;
    EXPECT_NE(mod.status().message().find(c.message), std::string::npos) << mod.status().message();
  }
}

TEST(OnnxImporter, SliceEndsFromShapeArithmeticStaySymbolic) {
  // pos[:seq] of the BERT position embeddings, seq = Shape(x)[1].
  OnnxModelBuilder m(13);
  m.Input("x", TensorProto::FLOAT, {"batch", "seq", 4});
  m.Initializer("pos", {16, 4}, std::vector<float>(64, 0.5f));
  m.InitializerI64("zero", {1}, {0});
  m.InitializerI64("one", {1}, {1});
  m.Node("Shape", {"x"}, {"sh"});
  m.Node("Gather", {"sh", "one"}, {"seq"});
  m.Node("Slice", {"pos", "zero", "seq", "zero"}, {"pe"});
  m.Node("Add", {"x", "pe"}, {"y"});
  m.Output("y");
  auto mod = Import(m);
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  std::string t = Text(*mod);
  EXPECT_NE(t.find("R.strided_slice(metadata[\"relax.expr.Constant\"][0], R.shape([0]), R.shape([0]), R.shape([seq]), "
                   "R.shape([1]))"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("R.Tensor((seq, 4), dtype=\"float32\")"), std::string::npos) << t;
}

TEST(OnnxImporter, ShapeSubgraphsFoldToShapes) {
  // y = Reshape(x, Concat(Gather(Shape(x), 0), [-1])) on x: (n, 3, 4)
  OnnxModelBuilder m(13);
  m.Input("x", TensorProto::FLOAT, {"n", 3, 4});
  m.Node("Shape", {"x"}, {"s"});
  m.InitializerI64("zero", {}, {0});
  m.Node("Gather", {"s", "zero"}, {"d0"});
  m.InitializerI64("axes", {1}, {0});
  m.Node("Unsqueeze", {"d0", "axes"}, {"d0v"});
  m.InitializerI64("minus1", {1}, {-1});
  m.Node("Concat", {"d0v", "minus1"}, {"target"});
  OnnxModelBuilder::AttrInt(m.graph().mutable_node(3), "axis", 0);
  m.Node("Reshape", {"x", "target"}, {"y"});
  m.Node("Size", {"x"}, {"size"});
  m.Node("Cast", {"size"}, {"sizef"});
  OnnxModelBuilder::AttrInt(m.graph().mutable_node(6), "to", TensorProto::INT64);
  m.Node("ConstantOfShape", {"s"}, {"zeros"});
  m.Node("Add", {"x", "zeros"}, {"z"});
  m.Output("y");
  m.Output("z");
  auto mod = Import(m);
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  std::string t = Text(*mod);
  EXPECT_NE(t.find("R.reshape(x, R.shape([n, 12]))"), std::string::npos) << t;
  EXPECT_NE(t.find("R.full(R.shape([n, 3, 4])"), std::string::npos) << t;
  for (const char* op : {"R.shape_of", "R.take", "R.concat", "R.expand_dims", "R.astype"}) {
    EXPECT_EQ(t.find(op), std::string::npos) << op << " in\n" << t;
  }
}

TEST(OnnxImporter, AllProblemsAreListedAtOnce) {
  OnnxModelBuilder m(13);
  m.Input("x", TensorProto::FLOAT, {2, 3});
  m.Node("Relu", {"x"}, {"a"});
  m.Node("FancyOp", {"a"}, {"b"}, "fancy");          // unsupported operator
  m.Node("Tanh", {"b"}, {"c"});                       // depends on it: not reported again
  auto* g = m.Node("Gelu", {"x"}, {"d"});             // unsupported attribute value
  OnnxModelBuilder::AttrString(g, "approximate", "cubic");
  auto* n = m.Node("Custom", {"x"}, {"e"});           // another domain
  n->set_domain("com.example");
  m.Node("Cast", {"x"}, {"f"});                       // unsupported dtype
  OnnxModelBuilder::AttrInt(m.graph().mutable_node(5), "to", TensorProto::COMPLEX64);
  m.Node("Relu", {"nowhere"}, {"g"});                 // undefined input
  m.Output("c");
  m.Output("d");
  auto mod = Import(m);
  ASSERT_FALSE(mod.ok());
  const std::string& msg = mod.status().message();
  EXPECT_NE(msg.find("5 problems"), std::string::npos) << msg;
  EXPECT_NE(msg.find("node \"fancy\" (#1) FancyOp (opset 13): unsupported operator"), std::string::npos) << msg;
  EXPECT_NE(msg.find("node #3 Gelu (opset 13): approximate=\"cubic\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("domain \"com.example\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("node #5 Cast (opset 13): element type COMPLEX64 is not supported"), std::string::npos) << msg;
  EXPECT_NE(msg.find("input \"nowhere\" is not defined"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("Tanh"), std::string::npos) << msg;
}

TEST(OnnxImporter, OpsetOutsideTheSupportedRangeIsAnError) {
  for (int64_t opset : {0, 22}) {
    OnnxModelBuilder m(opset);
    m.Input("x", TensorProto::FLOAT, {2});
    m.Node("Relu", {"x"}, {"y"});
    m.Output("y");
    auto mod = Import(m);
    ASSERT_FALSE(mod.ok());
    EXPECT_NE(mod.status().message().find("opset " + std::to_string(opset) + " of the default domain; Kiln supports opsets 1 to 21"),
              std::string::npos) << mod.status().message();
  }
}

TEST(OnnxImporter, UnsupportedInputDtypeAndBadBytesAreErrors) {
  OnnxModelBuilder m(13);
  m.Input("x", TensorProto::COMPLEX128, {2});
  m.Input("s", TensorProto::STRING, {2});
  m.Node("Relu", {"x"}, {"y"});
  m.Output("y");
  auto mod = Import(m);
  ASSERT_FALSE(mod.ok());
  EXPECT_NE(mod.status().message().find("2 problems"), std::string::npos) << mod.status().message();
  EXPECT_NE(mod.status().message().find("graph input \"x\": element type COMPLEX128 is not supported"), std::string::npos)
      << mod.status().message();
  std::string junk = "this is not a protobuf";
  auto bad = ImportBuffer(junk.data(), junk.size(), ".", {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("not a valid ONNX model"), std::string::npos);
  auto missing = ImportFile("/nonexistent/model.onnx", {});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cannot open ONNX model"), std::string::npos);
}

// Every element type Kiln computes in imports, as a graph input and as an
// initializer in its typed field (the 16-bit types in int32_data, the wide
// unsigned ones in uint64_data).
TEST(OnnxImporter, EveryKilnDtypeImports) {
  struct Case { int onnx; const char* dtype; };
  const Case cases[] = {
      {TensorProto::FLOAT16, "float16"}, {TensorProto::BFLOAT16, "bfloat16"}, {TensorProto::INT16, "int16"},
      {TensorProto::UINT16, "uint16"},   {TensorProto::UINT32, "uint32"},     {TensorProto::UINT64, "uint64"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.dtype);
    OnnxModelBuilder m(13);
    m.Input("x", c.onnx, {2});
    m.Node("Identity", {"x"}, {"y"});
    m.Output("y", c.onnx);
    auto mod = Import(m);
    ASSERT_TRUE(mod.ok()) << mod.status().ToString();
    EXPECT_NE(Text(*mod).find(std::string("R.Tensor((2,), dtype=\"") + c.dtype + "\")"), std::string::npos)
        << Text(*mod);

    TensorProto t;
    t.set_name("w");
    t.add_dims(2);
    t.set_data_type(c.onnx);
    bool wide = c.onnx == TensorProto::UINT32 || c.onnx == TensorProto::UINT64;
    for (uint64_t v : {uint64_t{7}, uint64_t{0xfffe}}) {
      if (wide) {
        t.add_uint64_data(v);
      } else {
        t.add_int32_data(static_cast<int32_t>(v));
      }
    }
    Result<Tensor> w = TensorFromProto(t, ".");
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    EXPECT_EQ(DTypeToString(w->dtype()), c.dtype);
    const auto* bytes = static_cast<const uint8_t*>(w->raw_data());
    size_t width = w->dtype().bytes();
    EXPECT_EQ(bytes[0], 7);
    EXPECT_EQ(bytes[width], 0xfe);
    EXPECT_EQ(bytes[width + 1], 0xff);
  }
}

TEST(OnnxImporter, InputValuesBindGraphInputsAsConstants) {
  OnnxModelBuilder m(13);
  m.Input("x", TensorProto::FLOAT, {2, 6});
  m.Input("shape", TensorProto::INT64, {2});
  m.Node("Reshape", {"x", "shape"}, {"y"});
  m.Output("y");
  ImportOptions options;
  Tensor shape = Tensor::Empty(std::vector<int64_t>{2}, DType::Int64()).value();
  shape.data<int64_t>()[0] = 3;
  shape.data<int64_t>()[1] = -1;
  options.input_values["shape"] = shape;
  auto mod = Import(m, options);
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  EXPECT_EQ(mod->FindRelax("main")->params.size(), 1u);
  EXPECT_NE(Text(*mod).find("R.reshape(x, R.shape([3, 4]))"), std::string::npos) << Text(*mod);
  // Without the value the shape is a parameter, read when the program runs.
  auto unbound = Import(m);
  ASSERT_TRUE(unbound.ok()) << unbound.status().ToString();
  EXPECT_EQ(unbound->FindRelax("main")->params.size(), 2u);
  EXPECT_NE(Text(*unbound).find("R.tensor_to_shape("), std::string::npos) << Text(*unbound);
  options.input_values["nope"] = shape;
  auto bad = Import(m, options);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("input value \"nope\" names no graph input"), std::string::npos)
      << bad.status().message();
}

// Corrupt files fail with a Status, never a crash: every byte of a small
// model changed in turn.
TEST(OnnxImporter, CorruptedModelsDoNotCrash) {
  OnnxModelBuilder m(13);
  m.Input("x", TensorProto::FLOAT, {"n", 4});
  m.InitializerI64("shape", {2}, {-1, 2});
  m.Node("Reshape", {"x", "shape"}, {"r"});
  m.Node("Shape", {"r"}, {"s"});
  m.Node("ConstantOfShape", {"s"}, {"z"});
  m.Node("Add", {"r", "z"}, {"y"});
  m.Output("y");
  std::string bytes = m.Serialize();
  int ok = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (unsigned char v : {0x00, 0x7f, 0xff}) {
      std::string b = bytes;
      b[i] = static_cast<char>(v);
      auto mod = ImportBuffer(b.data(), b.size(), ".", {});
      ok += mod.ok();
    }
  }
  EXPECT_GT(ok, 0);  // some changes (e.g. in names) still give a valid model
}

// Extreme attribute values and constant operands give errors, never crashes
// or overflow (the test runs under UBSan in CI).
TEST(OnnxImporter, ExtremeAttributeValuesDoNotCrash) {
  const std::vector<int64_t> values = {INT64_MIN, -(int64_t{1} << 40), -3, -1, 0, 1, 2, 7, int64_t{1} << 40, INT64_MAX};
  struct OpCase {
    const char* op;
    std::vector<const char*> int_attrs;
    std::vector<const char*> list_attrs;
    int const_inputs;  // trailing int64 inputs taking the value
  };
  const std::vector<OpCase> cases = {
      {"Conv", {"group"}, {"kernel_shape", "strides", "pads", "dilations"}, 0},
      {"ConvTranspose", {"group"}, {"strides", "pads", "output_padding", "output_shape", "dilations"}, 0},
      {"MaxPool", {"ceil_mode"}, {"kernel_shape", "strides", "pads", "dilations"}, 0},
      {"AveragePool", {"count_include_pad"}, {"kernel_shape", "strides", "pads"}, 0},
      {"Softmax", {"axis"}, {}, 0},
      {"Flatten", {"axis"}, {}, 0},
      {"Transpose", {}, {"perm"}, 0},
      {"Concat", {"axis"}, {}, 0},
      {"Gather", {"axis"}, {}, 1},
      {"Reshape", {"allowzero"}, {}, 1},
      {"Unsqueeze", {}, {}, 1},
      {"Squeeze", {}, {}, 1},
      {"Tile", {}, {}, 1},
      {"Expand", {}, {}, 1},
      {"TopK", {"axis"}, {}, 1},
      {"Trilu", {"upper"}, {}, 1},
      {"CumSum", {"exclusive"}, {}, 1},
      {"ReduceSum", {"keepdims"}, {}, 1},
      {"ReduceMean", {"keepdims"}, {"axes"}, 0},
      {"ArgMax", {"axis", "keepdims"}, {}, 0},
      {"Split", {"axis"}, {}, 1},
      {"LayerNormalization", {"axis"}, {}, 0},
      {"Pad", {}, {}, 1},
      {"ConstantOfShape", {}, {}, 0},
  };
  int imports = 0;
  for (const auto& c : cases) {
    for (size_t vi = 0; vi < values.size(); ++vi) {
      int64_t v = values[vi];
      OnnxModelBuilder m(13);
      m.Input("x", TensorProto::FLOAT, {2, 3, 4, 5});
      m.Initializer("w", {2, 3, 1, 1}, std::vector<float>(6, 1.0f));
      std::vector<std::string> inputs = {"x"};
      if (std::string(c.op) == "Conv" || std::string(c.op) == "ConvTranspose") inputs.push_back("w");
      if (std::string(c.op) == "LayerNormalization") inputs.push_back("w");
      if (std::string(c.op) == "Concat") inputs.push_back("x");
      if (std::string(c.op) == "ConstantOfShape") {
        m.InitializerI64("shape", {2}, {v, 3});
        inputs = {"shape"};
      }
      for (int i = 0; i < c.const_inputs; ++i) {
        std::string name = "c" + std::to_string(i);
        // Lists of 1, 2 and 4 values by turns (axes, shapes, pads, repeats).
        size_t n = vi % 3 == 0 ? 1 : vi % 3 == 1 ? 2 : (std::string(c.op) == "Pad" ? 8 : 4);
        m.InitializerI64(name, {static_cast<int64_t>(n)}, std::vector<int64_t>(n, v));
        inputs.push_back(name);
      }
      auto* n = m.Node(c.op, inputs, {"y"});
      for (const char* a : c.int_attrs) OnnxModelBuilder::AttrInt(n, a, v);
      for (const char* a : c.list_attrs) OnnxModelBuilder::AttrInts(n, a, {v, v});
      m.Output("y");
      (void)Import(m);  // any Status; what matters is no crash or overflow
      ++imports;
    }
  }
  EXPECT_EQ(imports, static_cast<int>(cases.size() * values.size()));
}

TEST(OnnxImporter, SymbolicValueUsedAsTensorBecomesShapeToTensor) {
  OnnxModelBuilder m(13);
  m.Input("x", TensorProto::FLOAT, {"n", 3});
  m.Node("Shape", {"x"}, {"s"});
  m.Output("s", TensorProto::INT64);
  auto mod = Import(m);
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  const std::string text = Text(mod.value());
  EXPECT_NE(text.find("R.shape_to_tensor(R.shape([n, 3]))"), std::string::npos) << text;
}

TEST(OnnxImporter, RunTimeShapeOperandIsReadIntoSymbolicVariables) {
  OnnxModelBuilder m(13);
  m.Input("x", TensorProto::FLOAT, {2, 3});
  m.Input("pads", TensorProto::INT64, {4});
  m.Node("Pad", {"x", "pads"}, {"y"});
  m.Output("y");
  auto mod = Import(m);
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  const std::string text = Text(mod.value());
  // Read as two shapes (max(p, 0) and max(-p, 0)): the padding and the crop.
  EXPECT_NE(text.find("R.tensor_to_shape("), std::string::npos) << text;
  EXPECT_NE(text.find("R.Shape([pads_grow_0, pads_grow_1, pads_grow_2, pads_grow_3])"), std::string::npos) << text;
  EXPECT_NE(text.find("R.Shape([pads_crop_0, pads_crop_1, pads_crop_2, pads_crop_3])"), std::string::npos) << text;
  EXPECT_NE(text.find("R.strided_slice("), std::string::npos) << text;
}

}  // namespace
}  // namespace onnx
}  // namespace kiln
