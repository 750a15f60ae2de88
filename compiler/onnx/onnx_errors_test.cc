// Every user-facing error of the importer, made to fire: one small model per
// message, checked for the node label and the text.
#include <gtest/gtest.h>

#include <functional>

#include "compiler/onnx/onnx_importer.h"
#include "compiler/onnx/onnx_model_builder.h"

namespace kiln {
namespace onnx {
namespace {

using ::onnx::TensorProto;
using B = OnnxModelBuilder;
using Node = ::onnx::NodeProto;

struct ErrorCase {
  const char* name;
  std::vector<OnnxDim> x_shape;  // input "x" (float32)
  std::function<void(B&)> build;  // adds nodes producing "y" (and initializers)
  const char* expected;
  int64_t opset = 13;  // of the model
};

Node* Op(B& m, const char* op, std::vector<std::string> inputs, std::vector<std::string> outputs = {"y"}) {
  return m.Node(op, inputs, outputs);
}

TEST(OnnxImporterErrors, EveryMessageFires) {
  const std::vector<ErrorCase> cases = {
      {"mod fmod on ints", {2}, [](B& m) {
         m.InitializerI64("i", {2}, {1, 2});
         B::AttrInt(Op(m, "Mod", {"i", "i"}), "fmod", 1);
       }, "Mod (opset 13): fmod=1 on integers"},
      {"mod fmod=0 on floats", {2}, [](B& m) { Op(m, "Mod", {"x", "x"}); }, "fmod=0 on floats"},
      {"conv 4-D", {1, 1, 2, 2, 2, 2}, [](B& m) {
         m.Initializer("w", {1, 1, 1, 1, 1, 1}, {1});
         Op(m, "Conv", {"x", "w"});
       }, "4-D convolution (1-D to 3-D are supported)"},
      {"conv 3-D symbolic depth", {1, 1, "d", 2, 2}, [](B& m) {
         m.Initializer("w", {1, 1, 1, 1, 1}, {1});
         Op(m, "Conv", {"x", "w"});
       }, "3-D convolution with a symbolic depth"},
      {"conv weight rank", {1, 1, 4, 4}, [](B& m) {
         m.Initializer("w", {1, 1, 1}, {1});
         Op(m, "Conv", {"x", "w"});
       }, "the weight has rank 3, the input rank 4"},
      {"conv auto_pad", {1, 1, 4, 4}, [](B& m) {
         m.Initializer("w", {1, 1, 1, 1}, {1});
         B::AttrString(Op(m, "Conv", {"x", "w"}), "auto_pad", "FOO");
       }, "auto_pad=\"FOO\""},
      {"conv strides length", {1, 1, 4, 4}, [](B& m) {
         m.Initializer("w", {1, 1, 1, 1}, {1});
         B::AttrInts(Op(m, "Conv", {"x", "w"}), "strides", {1, 1, 1});
       }, "strides, dilations, kernel_shape need 2 values and pads 4"},
      {"conv stride 0", {1, 1, 4, 4}, [](B& m) {
         m.Initializer("w", {1, 1, 1, 1}, {1});
         B::AttrInts(Op(m, "Conv", {"x", "w"}), "strides", {0, 1});
       }, "strides, dilations and kernel_shape must be positive"},
      {"conv SAME symbolic", {1, 1, "h", 4}, [](B& m) {
         m.Initializer("w", {1, 1, 3, 1}, {1, 1, 1});
         Node* n = Op(m, "Conv", {"x", "w"});
         B::AttrString(n, "auto_pad", "SAME_UPPER");
         B::AttrInts(n, "strides", {2, 1});  // total padding 1 or 2: the lower part 0 or 1
       }, "auto_pad=SAME_UPPER with a symbolic spatial dimension whose padding depends on it"},
      {"pool SAME symbolic ceil_mode", {1, 1, "h", 4}, [](B& m) {
         Node* n = Op(m, "MaxPool", {"x"});
         B::AttrInts(n, "kernel_shape", {2, 2});
         B::AttrInts(n, "strides", {2, 2});
         B::AttrString(n, "auto_pad", "SAME_LOWER");
         B::AttrInt(n, "ceil_mode", 1);
       }, "auto_pad=SAME_LOWER with a symbolic spatial dimension whose padding depends on it"},
      {"convtranspose 4-D", {1, 1, 2, 2, 2, 2}, [](B& m) {
         m.Initializer("w", {1, 1, 1, 1, 1, 1}, {1});
         Op(m, "ConvTranspose", {"x", "w"});
       }, "4-D transposed convolution (1-D to 3-D are supported)"},
      {"convtranspose output_padding", {1, 1, 4, 4}, [](B& m) {
         m.Initializer("w", {1, 1, 1, 1}, {1});
         B::AttrInts(Op(m, "ConvTranspose", {"x", "w"}), "output_padding", {1});
       }, "output_padding needs 2 values"},
      {"prelu slope rank", {2, 3}, [](B& m) {
         m.Initializer("s", {1, 2, 3}, {1, 1, 1, 1, 1, 1});
         Op(m, "PRelu", {"x", "s"});
       }, "PRelu (opset 13): slope of rank 3 does not broadcast to an input of rank 2"},
      {"gathernd symbolic tuple", {2, 3}, [](B& m) {
         m.Input("i", TensorProto::INT64, {4, "k"});
         Op(m, "GatherND", {"x", "i"});
       }, "GatherND (opset 13): indices whose last dimension (the index tuple's length) is symbolic"},
      {"gathernd batch_dims", {2, 3}, [](B& m) {
         m.InitializerI64("i", {2, 1}, {0, 1});
         B::AttrInt(Op(m, "GatherND", {"x", "i"}), "batch_dims", 2);
       }, "batch_dims 2 and index tuples of length 1 do not fit data of rank 2 and indices of rank 2"},
      {"gathernd scalar indices", {2, 3}, [](B& m) {
         m.InitializerI64("i", {}, {0});
         Op(m, "GatherND", {"x", "i"});
       }, "indices must have rank 1 or more"},
      {"reshape -1 beside 0", {2, 3}, [](B& m) {
         m.InitializerI64("s", {2}, {0, -1});
         B::AttrInt(Op(m, "Reshape", {"x", "s"}), "allowzero", 1);
       }, "Reshape (opset 13): shape has a -1 beside a 0 entry"},
      {"legacy broadcast=0", {2, 3}, [](B& m) {
         m.Initializer("b", {3}, {1, 2, 3});
         Op(m, "Add", {"x", "b"});
       }, "Add (opset 6): broadcast=0 (before opset 7) needs operands of the same shape", 6},
      {"legacy broadcast rank", {3}, [](B& m) {
         m.Initializer("b", {1, 3}, {1, 2, 3});
         B::AttrInt(Op(m, "Add", {"x", "b"}), "broadcast", 1);
       }, "broadcast=1: B has a higher rank than A", 6},
      {"legacy broadcast axis", {2, 3}, [](B& m) {
         m.Initializer("b", {3}, {1, 2, 3});
         Node* n = Op(m, "Mul", {"x", "b"});
         B::AttrInt(n, "broadcast", 1);
         B::AttrInt(n, "axis", 2);
       }, "broadcast=1: B of rank 1 does not fit A of rank 2 from axis 2", 6},
      {"legacy cast name", {2}, [](B& m) { B::AttrString(Op(m, "Cast", {"x"}), "to", "REAL"); },
       "Cast (opset 5): to=\"REAL\" names no element type", 5},
      {"legacy tile", {2}, [](B& m) {
         m.InitializerI64("t", {2}, {2, 2});
         m.InitializerI64("a", {}, {0});
         Op(m, "Tile", {"x", "t", "a"});
       }, "Tile (opset 5): tiles and axis must be single values", 5},
      {"legacy batchnorm training", {1, 2, 2}, [](B& m) {
         for (const char* n : {"g", "b", "mu", "v"}) m.Initializer(n, {2}, {1, 1});
         Op(m, "BatchNormalization", {"x", "g", "b", "mu", "v"});
       }, "BatchNormalization (opset 6): training mode (is_test=0, the default before opset 7)", 6},
      {"pool kernel", {1, 1, 4, 4}, [](B& m) { Op(m, "MaxPool", {"x"}); }, "kernel_shape is required"},
      {"pool 4-D", {1, 1, 2, 2, 2, 2}, [](B& m) { B::AttrInts(Op(m, "MaxPool", {"x"}), "kernel_shape", {1, 1, 1, 1}); },
       "4-D pooling (1-D to 3-D are supported)"},
      {"maxpool indices 1-D", {1, 1, 4}, [](B& m) {
         B::AttrInts(Op(m, "MaxPool", {"x"}, {"y", "idx"}), "kernel_shape", {2});
       }, "the Indices output of 1-D pooling"},
      {"maxpool indices symbolic", {"n", 1, 4, 4}, [](B& m) {
         B::AttrInts(Op(m, "MaxPool", {"x"}, {"y", "idx"}), "kernel_shape", {2, 2});
       }, "the Indices output of an input with symbolic dimensions"},
      {"batchnorm training", {1, 2, 2}, [](B& m) {
         for (const char* p : {"s", "b", "mu", "v"}) m.Initializer(p, {2}, {1, 1});
         B::AttrInt(Op(m, "BatchNormalization", {"x", "s", "b", "mu", "v"}), "training_mode", 1);
       }, "training mode (running mean/var outputs)"},
      {"batchnorm spatial", {1, 2, 2}, [](B& m) {
         for (const char* p : {"s", "b", "mu", "v"}) m.Initializer(p, {2}, {1, 1});
         B::AttrInt(Op(m, "BatchNormalization", {"x", "s", "b", "mu", "v"}), "spatial", 0);
       }, "spatial=0"},
      {"instancenorm rank", {2, 2}, [](B& m) {
         m.Initializer("s", {2}, {1, 1});
         Op(m, "InstanceNormalization", {"x", "s", "s"});
       }, "the input needs rank 3 or more"},
      {"instancenorm symbolic channels", {1, "c", 2}, [](B& m) {
         m.Initializer("s", {2}, {1, 1});
         Op(m, "InstanceNormalization", {"x", "s", "s"});
       }, "a symbolic channel count"},
      {"layernorm stash", {2, 2}, [](B& m) {
         m.Initializer("s", {2}, {1, 1});
         B::AttrInt(Op(m, "LayerNormalization", {"x", "s"}), "stash_type", 0);
       }, "stash_type=0"},
      {"softmax axis", {2, 2}, [](B& m) { B::AttrInt(Op(m, "Softmax", {"x"}), "axis", 5); }, "axis 5 is out of range for rank 2"},
      {"dropout training", {2}, [](B& m) {
         m.Initializer("r", {}, {0.5f});
         auto t = B::Tensor("t", {}, {});
         t.set_data_type(TensorProto::BOOL);
         t.add_int32_data(1);
         m.Initializer(t);
         Op(m, "Dropout", {"x", "r", "t"});
       }, "training_mode other than a constant false"},
      {"einsum operands", {2, 2}, [](B& m) { B::AttrString(Op(m, "Einsum", {"x"}), "equation", "...i,...i->..."); },
       "the equation has 2 operands, the node 1"},
      {"pad mode", {2}, [](B& m) {
         m.InitializerI64("p", {2}, {1, 1});
         B::AttrString(Op(m, "Pad", {"x", "p"}), "mode", "wrap");
       }, "mode=\"wrap\""},
      {"pad negative", {2}, [](B& m) {
         m.InitializerI64("p", {2}, {-1, 0});
         Op(m, "Pad", {"x", "p"});
       }, "negative pads [-1, 0]"},
      {"pad count", {2}, [](B& m) {
         m.InitializerI64("p", {4}, {1, 1, 1, 1});
         Op(m, "Pad", {"x", "p"});
       }, "pads has 4 values, rank 1 needs 2"},
      {"pad axes", {2}, [](B& m) {
         m.InitializerI64("p", {2}, {1, 1});
         m.Initializer("v", {}, {0});
         m.InitializerI64("a", {1}, {0});
         Op(m, "Pad", {"x", "p", "v", "a"});
       }, "the axes input needs opset 18 or later"},
      {"resize rank", {1, 2, 2}, [](B& m) {
         m.Initializer("s", {3}, {1, 1, 2});
         Op(m, "Resize", {"x", "", "s"});
       }, "a rank-3 input (NCHW images only)"},
      {"resize mode", {1, 1, 2, 2}, [](B& m) {
         m.Initializer("s", {4}, {1, 1, 2, 2});
         B::AttrString(Op(m, "Resize", {"x", "", "s"}), "mode", "area");
       }, "mode=\"area\""},
      {"resize coordinate mode", {1, 1, 2, 2}, [](B& m) {
         m.Initializer("s", {4}, {1, 1, 2, 2});
         B::AttrString(Op(m, "Resize", {"x", "", "s"}), "coordinate_transformation_mode", "sideways");
       }, "coordinate_transformation_mode=\"sideways\""},
      {"resize nearest mode", {1, 1, 2, 2}, [](B& m) {
         m.Initializer("s", {4}, {1, 1, 2, 2});
         B::AttrString(Op(m, "Resize", {"x", "", "s"}), "nearest_mode", "random");
       }, "nearest_mode=\"random\""},
      {"resize channels", {1, 1, 2, 2}, [](B& m) {
         m.Initializer("s", {4}, {1, 2, 2, 2});
         Op(m, "Resize", {"x", "", "s"});
       }, "resizing the batch or channel axis"},
      {"resize scales count", {1, 1, 2, 2}, [](B& m) {
         m.Initializer("s", {2}, {2, 2});
         Op(m, "Resize", {"x", "", "s"});
       }, "scales needs 4 values, got 2"},
      {"resize scales unknown", {1, 1, 2, 2}, [](B& m) {
         m.InitializerI64("s", {4}, {1, 1, 2, 2});  // a constant, but not float32
         Op(m, "Resize", {"x", "", "s"});
       }, "scales (input 2) must be a float32 constant known at import time"},
      {"squeeze run-time axes count", {2}, [](B& m) {
         m.Input("a", TensorProto::INT64, {3});
         Op(m, "Squeeze", {"x", "a"});
       }, "Squeeze (opset 13): 3 axes for a rank-1 input"},
      {"reduce symbolic axes count keepdims=0", {2, 2}, [](B& m) {
         m.Input("a", TensorProto::INT64, {"k"});
         B::AttrInt(Op(m, "ReduceSum", {"x", "a"}), "keepdims", 0);
       }, "axes (input 1) of symbolic length with keepdims=0 (the result's rank would depend on it)"},
      {"reduce symbolic axes float", {2, 2}, [](B& m) {
         m.Input("a", TensorProto::FLOAT, {"k"});
         Op(m, "ReduceSum", {"x", "a"});
       }, "axes (input 1) must be an int64 tensor, got float32"},
      {"cumsum run-time axis scalar data", {}, [](B& m) {
         m.Input("a", TensorProto::INT64, {});
         Op(m, "CumSum", {"x", "a"});
       }, "CumSum (opset 13): the input must have rank 1 or more"},
      {"tile run-time repeats count", {2}, [](B& m) {
         m.Input("r", TensorProto::INT64, {3});
         Op(m, "Tile", {"x", "r"});
       }, "repeats has 3 values for a rank-1 input"},
      {"slice run-time ends count", {4}, [](B& m) {
         m.Input("s", TensorProto::INT64, {1});
         m.Input("e", TensorProto::INT64, {2});
         Op(m, "Slice", {"x", "s", "e"});
       }, "ends has 2 values, starts has 1"},
      {"slice constant axes count with run-time starts", {4}, [](B& m) {
         m.Input("s", TensorProto::INT64, {1});
         m.Input("e", TensorProto::INT64, {1});
         m.InitializerI64("a", {2}, {0, 0});
         Op(m, "Slice", {"x", "s", "e", "a"});
       }, "axes has 2 values, starts has 1"},
      {"pad run-time constant_value count", {2}, [](B& m) {
         m.InitializerI64("p", {2}, {1, 1});
         m.Input("v", TensorProto::FLOAT, {2});
         Op(m, "Pad", {"x", "p", "v"});
       }, "constant_value (input 2) must be a scalar or hold one value"},
      {"resize run-time scales count", {1, 1, 2, 2}, [](B& m) {
         m.Input("s", TensorProto::FLOAT, {3});
         Op(m, "Resize", {"x", "", "s"});
       }, "scales (input 2) read at run time must be a float32 tensor of 4 values"},
      {"resize crop roi count", {1, 1, 2, 2}, [](B& m) {
         m.Input("s", TensorProto::FLOAT, {4});
         m.Input("roi", TensorProto::FLOAT, {4});
         B::AttrString(Op(m, "Resize", {"x", "roi", "s"}), "coordinate_transformation_mode", "tf_crop_and_resize");
       }, "a roi (input 1) that is not 8 values (all four axes)"},
      {"resize crop without roi", {1, 1, 2, 2}, [](B& m) {
         m.Input("s", TensorProto::FLOAT, {4});
         B::AttrString(Op(m, "Resize", {"x", "", "s"}), "coordinate_transformation_mode", "tf_crop_and_resize");
       }, "tf_crop_and_resize needs a roi (input 1)"},
      {"resize symbolic", {1, 1, "h", 2}, [](B& m) {
         m.Initializer("s", {4}, {1, 1, 1.5f, 2});
         Op(m, "Resize", {"x", "", "s"});
       }, "scale 1.500000 on a symbolic dimension (whole numbers only)"},
      {"resize integer data", {1, 1, 2, 2}, [](B& m) {
         auto* c = Op(m, "Cast", {"x"}, {"xi"});
         B::AttrInt(c, "to", TensorProto::INT32);
         m.Initializer("s", {4}, {1, 1, 2, 2});
         B::AttrString(Op(m, "Resize", {"xi", "", "s"}), "mode", "cubic");
       }, "this resize form on int32 data"},
      {"reshape two -1", {2, 2}, [](B& m) {
         m.InitializerI64("s", {2}, {-1, -1});
         Op(m, "Reshape", {"x", "s"});
       }, "shape has more than one -1"},
      {"reshape negative", {2, 2}, [](B& m) {
         m.InitializerI64("s", {2}, {-2, 2});
         Op(m, "Reshape", {"x", "s"});
       }, "shape entry -2 is negative"},
      {"reshape 0 past rank", {4}, [](B& m) {
         m.InitializerI64("s", {2}, {2, 0});
         Op(m, "Reshape", {"x", "s"});
       }, "shape entry 1 is 0 but the input has rank 1"},
      {"unsqueeze axes", {2}, [](B& m) { Op(m, "Unsqueeze", {"x"}); }, "axes are required"},
      {"split sizes", {4}, [](B& m) {
         m.InitializerI64("s", {3}, {1, 1, 2});
         Op(m, "Split", {"x", "s"}, {"y", "z"});
       }, "split has 3 sizes for 2 outputs"},
      {"slice step", {4}, [](B& m) {
         for (const char* p : {"b", "e", "a"}) m.InitializerI64(p, {1}, {0});
         m.InitializerI64("st", {1}, {0});
         Op(m, "Slice", {"x", "b", "e", "a", "st"});
       }, "a step is 0"},
      {"slice lengths", {4}, [](B& m) {
         m.InitializerI64("b", {1}, {0});
         m.InitializerI64("e", {2}, {1, 1});
         Op(m, "Slice", {"x", "b", "e"});
       }, "starts, ends, axes and steps must have the same length"},
      {"gather known index", {2, 3}, [](B& m) {
         Op(m, "Shape", {"x"}, {"s"});
         m.InitializerI64("i", {1}, {5});
         Op(m, "Gather", {"s", "i"}, {"g"});
         Op(m, "Reshape", {"x", "g"});
       }, "index 5 is out of range for 2 elements"},
      {"expand", {2, 3}, [](B& m) {
         m.InitializerI64("s", {2}, {2, 4});
         Op(m, "Expand", {"x", "s"});
       }, "cannot broadcast dimension 3 to 4"},
      {"expand run-time shape of unknown length", {2, 3}, [](B& m) {
         m.Input("s", TensorProto::INT64, {"r"});
         Op(m, "Expand", {"x", "s"});
       }, "shape (input 1) is read as a shape when the program runs, so its length must be static; got a symbolic length"},
      {"pads run-time tensor of two dimensions", {2, 3}, [](B& m) {
         m.Input("p", TensorProto::INT64, {2, 2});
         Op(m, "Pad", {"x", "p"});
       }, "pads (input 1) must be a 1-d tensor (or a scalar) to be read as a shape, got 2 dimensions"},
      {"trilu run-time k of two values", {2, 3}, [](B& m) {
         m.Input("k", TensorProto::INT64, {2});
         Op(m, "Trilu", {"x", "k"});
       }, "k (input 1) must hold one value"},
      {"constant sparse", {2}, [](B& m) {
         auto* n = Op(m, "Constant", {}, {"c"});
         auto* a = n->add_attribute();
         a->set_name("sparse_value");
         a->set_type(::onnx::AttributeProto::SPARSE_TENSOR);
         Op(m, "Add", {"x", "c"});
       }, "the sparse_value attribute (sparse and string constants)"},
      {"constant none", {2}, [](B& m) {
         Op(m, "Constant", {}, {"c"});
         Op(m, "Add", {"x", "c"});
       }, "has no value attribute"},
      {"range run-time limit not a scalar", {2}, [](B& m) {
         m.Input("l", TensorProto::FLOAT, {1});
         m.Initializer("s", {}, {0});
         Op(m, "Range", {"s", "l", "s"});
       }, "start, limit and delta must be scalars of one dtype"},
      {"topk sorted", {4}, [](B& m) {
         m.InitializerI64("k", {1}, {2});
         B::AttrInt(Op(m, "TopK", {"x", "k"}, {"y", "i"}), "sorted", 0);
       }, "sorted=0"},
      {"topk k", {4}, [](B& m) {
         m.InitializerI64("k", {2}, {2, 2});
         Op(m, "TopK", {"x", "k"}, {"y", "i"});
       }, "K must hold one value"},
      {"cumsum axis", {4}, [](B& m) {
         m.InitializerI64("a", {2}, {0, 0});
         Op(m, "CumSum", {"x", "a"});
       }, "axis must hold one value"},
      {"trilu k", {2, 2}, [](B& m) {
         m.InitializerI64("k", {2}, {0, 0});
         Op(m, "Trilu", {"x", "k"});
       }, "k must hold one value"},
      {"gemm rank", {2, 2, 2}, [](B& m) { Op(m, "Gemm", {"x", "x"}); }, "A and B must be matrices"},
      {"variadic none", {2}, [](B& m) { Op(m, "Max", {}); }, "needs at least one input"},
      {"missing input", {2}, [](B& m) { Op(m, "Add", {"x"}); }, "input 1 is required"},
      {"attribute type", {2, 2}, [](B& m) { B::AttrString(Op(m, "Softmax", {"x"}), "axis", "one"); },
       "attribute axis must be an integer"},
      {"attribute list type", {2, 2}, [](B& m) { B::AttrString(Op(m, "Transpose", {"x"}), "perm", "one"); },
       "attribute perm must be a list of integers"},
      {"initializer raw size", {2}, [](B& m) {
         auto t = B::TensorRaw("w", {3}, {1, 2});
         m.Initializer(t);
         Op(m, "Add", {"x", "x"});
       }, "initializer \"w\": holds 8 bytes of data, its shape needs 12"},
      {"output not produced", {2}, [](B& m) {
         Op(m, "Relu", {"x"});
         m.Output("nowhere");
       }, "graph output \"nowhere\" is not produced by any node"},
  };
  for (const auto& c : cases) {
    B m(c.opset);
    m.Input("x", TensorProto::FLOAT, c.x_shape);
    c.build(m);
    if (m.graph().output_size() == 0) m.Output("y");
    std::string bytes = m.Serialize();
    auto mod = ImportBuffer(bytes.data(), bytes.size(), ".", {});
    ASSERT_FALSE(mod.ok()) << c.name;
    EXPECT_NE(mod.status().message().find(c.expected), std::string::npos) << c.name << ":\n" << mod.status().message();
  }
}

TEST(OnnxImporterErrors, ModelLevelErrors) {
  auto import = [](const B& m) {
    std::string bytes = m.Serialize();
    return ImportBuffer(bytes.data(), bytes.size(), ".", {});
  };
  {
    B m(13);
    m.model().clear_opset_import();
    m.Input("x", TensorProto::FLOAT, {2});
    auto r = import(m);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("imports no opset of the default domain"), std::string::npos);
  }
  {
    B m(13);
    m.Input("x", TensorProto::FLOAT, {2});
    auto r = import(m);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("the graph has no outputs"), std::string::npos) << r.status().message();
  }
  {
    B m(13);
    auto* in = m.graph().add_input();
    in->set_name("x");
    in->mutable_type()->mutable_tensor_type()->set_elem_type(TensorProto::FLOAT);
    auto* seq = m.graph().add_input();
    seq->set_name("s");
    seq->mutable_type()->mutable_sequence_type();
    m.Node("Relu", {"x"}, {"y"});
    m.Output("y");
    auto r = import(m);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("graph input \"x\" has no shape"), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("graph input \"s\" is not a tensor"), std::string::npos) << r.status().message();
  }
  {
    B m(13);
    m.Input("x", TensorProto::FLOAT, {int64_t{1} << 52});
    m.Node("Relu", {"x"}, {"y"});
    m.Output("y");
    auto r = import(m);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("graph input \"x\" has dimension 4503599627370496"), std::string::npos)
        << r.status().message();
  }
}

}  // namespace
}  // namespace onnx
}  // namespace kiln
