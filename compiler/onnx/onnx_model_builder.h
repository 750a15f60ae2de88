// Builds small ONNX models in C++ (tests): graph inputs/outputs, initializers,
// nodes with attributes, serialized to bytes or a file. Header-only; needs
// Debian's onnx_proto (link kiln_onnx_importer).
//
//   OnnxModelBuilder m(13);
//   m.Input("x", onnx::TensorProto::FLOAT, {"n", 4});
//   m.Initializer("w", {4, 3}, std::vector<float>{...});
//   m.Node("MatMul", {"x", "w"}, {"y"});
//   m.Output("y", onnx::TensorProto::FLOAT);
//   std::string bytes = m.Serialize();
#ifndef KILN_COMPILER_ONNX_ONNX_MODEL_BUILDER_H_
#define KILN_COMPILER_ONNX_ONNX_MODEL_BUILDER_H_

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <variant>
#include <vector>

namespace kiln {
namespace onnx {

// A dimension: a value or a dim_param name, or Unknown() (neither field set).
struct OnnxDim {
  static OnnxDim Unknown() {
    OnnxDim d(int64_t{0});
    d.unknown = true;
    return d;
  }
  OnnxDim(int64_t v) : value(v) {}             // NOLINT
  OnnxDim(int v) : value(v) {}                 // NOLINT
  OnnxDim(const char* p) : param(p) {}         // NOLINT
  OnnxDim(std::string p) : param(std::move(p)) {}  // NOLINT
  int64_t value = -1;
  std::string param;
  bool unknown = false;
};

class OnnxModelBuilder {
 public:
  explicit OnnxModelBuilder(int64_t opset = 13) {
    model_.set_ir_version(8);
    model_.set_producer_name("kiln-test");
    auto* op = model_.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    model_.mutable_graph()->set_name("g");
  }

  ::onnx::ModelProto& model() { return model_; }
  ::onnx::GraphProto& graph() { return *model_.mutable_graph(); }

  void Input(const std::string& name, int elem_type, const std::vector<OnnxDim>& dims) {
    FillValueInfo(graph().add_input(), name, elem_type, &dims);
  }
  // An output with no shape (the importer infers it).
  void Output(const std::string& name, int elem_type = ::onnx::TensorProto::FLOAT) {
    FillValueInfo(graph().add_output(), name, elem_type, nullptr);
  }

  static ::onnx::TensorProto Tensor(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v) {
    ::onnx::TensorProto t = Header(name, dims, ::onnx::TensorProto::FLOAT);
    for (float x : v) t.add_float_data(x);
    return t;
  }
  static ::onnx::TensorProto TensorI64(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int64_t>& v) {
    ::onnx::TensorProto t = Header(name, dims, ::onnx::TensorProto::INT64);
    for (int64_t x : v) t.add_int64_data(x);
    return t;
  }
  // raw_data form (little-endian bytes).
  static ::onnx::TensorProto TensorRaw(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v) {
    ::onnx::TensorProto t = Header(name, dims, ::onnx::TensorProto::FLOAT);
    t.set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
    return t;
  }

  void Initializer(const ::onnx::TensorProto& t) { *graph().add_initializer() = t; }
  void Initializer(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v) {
    Initializer(Tensor(name, dims, v));
  }
  void InitializerI64(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int64_t>& v) {
    Initializer(TensorI64(name, dims, v));
  }

  ::onnx::NodeProto* Node(const std::string& op, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs, const std::string& name = "") {
    auto* n = graph().add_node();
    n->set_op_type(op);
    if (!name.empty()) n->set_name(name);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return n;
  }

  static void AttrInt(::onnx::NodeProto* n, const std::string& name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void AttrFloat(::onnx::NodeProto* n, const std::string& name, float v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  static void AttrString(::onnx::NodeProto* n, const std::string& name, const std::string& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::STRING);
    a->set_s(v);
  }
  static void AttrInts(::onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void AttrFloats(::onnx::NodeProto* n, const std::string& name, const std::vector<float>& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::FLOATS);
    for (float x : v) a->add_floats(x);
  }
  // A graph attribute (If's branches, Loop's body): `sub`'s graph, built
  // with the same Node / Output / Initializer calls.
  static void AttrGraph(::onnx::NodeProto* n, const std::string& name, const OnnxModelBuilder& sub) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::GRAPH);
    *a->mutable_g() = sub.model_.graph();
    a->mutable_g()->set_name(name);
  }
  static void AttrTensor(::onnx::NodeProto* n, const std::string& name, const ::onnx::TensorProto& t) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::TENSOR);
    *a->mutable_t() = t;
  }

  std::string Serialize() const {
    std::string s;
    model_.SerializeToString(&s);
    return s;
  }

 private:
  static ::onnx::TensorProto Header(const std::string& name, const std::vector<int64_t>& dims, int type) {
    ::onnx::TensorProto t;
    t.set_name(name);
    t.set_data_type(type);
    for (int64_t d : dims) t.add_dims(d);
    return t;
  }
  static void FillValueInfo(::onnx::ValueInfoProto* vi, const std::string& name, int elem_type,
                            const std::vector<OnnxDim>* dims) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem_type);
    if (!dims) return;
    auto* shape = tt->mutable_shape();
    for (const auto& d : *dims) {
      auto* dim = shape->add_dim();
      if (d.unknown) continue;
      if (d.param.empty()) dim->set_dim_value(d.value);
      else dim->set_dim_param(d.param);
    }
  }

  ::onnx::ModelProto model_;
};

}  // namespace onnx
}  // namespace kiln

#endif  // KILN_COMPILER_ONNX_ONNX_MODEL_BUILDER_H_
