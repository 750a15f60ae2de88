#include "runtime/vmfb_loader.h"

#include <cstring>
#include <map>
#include <set>

#include "runtime/checksum.h"
#include "runtime/native_library.h"
#include "runtime/registry.h"
#include "runtime/tensor.h"
#include "runtime/thread_pool.h"
#include "runtime/vmfb_gpu.h"
#include "schemas/vmfb_generated.h"

namespace kiln {
namespace {

constexpr uint64_t kSegmentAlignment = 64;
// Caps on counts that size per-call state, so a corrupt file cannot ask for
// gigabytes of registers before anything runs.
constexpr uint32_t kMaxRegisters = 1u << 20;
constexpr uint32_t kMaxShapeHeap = 1u << 20;
constexpr size_t kMaxRank = 64;

Status Corrupt(const std::string& what) { return DataLoss("corrupt .vmfb: " + what); }

std::string Str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

bool DTypeIsSane(DType t) {
  bool code_ok = t.code == kDLInt || t.code == kDLUInt || t.code == kDLFloat || t.code == kDLBfloat;
  bool bits_ok = t.bits == 1 || t.bits == 8 || t.bits == 16 || t.bits == 32 || t.bits == 64;
  return code_ok && bits_ok && t.lanes >= 1 && t.lanes <= 64;
}

DType ToDType(const fb::DType* d) {
  if (d == nullptr) return DType{255, 0, 0};  // rejected by DTypeIsSane
  return DType{d->code(), d->bits(), d->lanes()};
}

// Bytes of a dense tensor, or an error for negative dims / overflow.
Result<uint64_t> DenseBytes(DType dtype, const std::vector<int64_t>& shape, const std::string& what) {
  if (!DTypeIsSane(dtype)) {
    return Corrupt(StrFormat("%s has an invalid dtype (code %d, bits %d, lanes %d)", what.c_str(), dtype.code,
                             dtype.bits, dtype.lanes));
  }
  if (shape.size() > kMaxRank) return Corrupt(StrFormat("%s has rank %zu", what.c_str(), shape.size()));
  uint64_t n = dtype.bytes();
  for (int64_t d : shape) {
    if (d < 0) return Corrupt(what + " has a negative dimension in " + ShapeToString(shape));
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) return Corrupt(what + " is too large");
  }
  return n;
}

// [offset, offset + size) inside [0, limit)?
bool RangeInside(uint64_t offset, uint64_t size, uint64_t limit) {
  uint64_t end;
  if (__builtin_add_overflow(offset, size, &end)) return false;
  return end <= limit;
}

// Copies the bytes: the FlatBuffers verifier checks vectors for 4-byte
// alignment only, so in a damaged file 8-byte elements may be misaligned and
// reading them as int64_t would be undefined behaviour (found by fuzzing).
std::vector<int64_t> ToVector(const flatbuffers::Vector<int64_t>* v) {
  std::vector<int64_t> out;
  if (v != nullptr && v->size() > 0) {
    out.resize(v->size());
    std::memcpy(out.data(), v->Data(), v->size() * sizeof(int64_t));
  }
  return out;
}

ProgramTarget DecodeTarget(const fb::Target* t) {
  ProgramTarget out;
  if (t != nullptr) {
    out.triple = Str(t->triple());
    out.cpu = Str(t->cpu());
    out.features = Str(t->features());
  }
  return out;
}

Result<ProgramValueInfo> DecodeValueInfo(const fb::ValueInfo* v, const std::string& what) {
  if (v == nullptr) return Corrupt(what + " is missing");
  ProgramValueInfo out;
  out.name = Str(v->name());
  if (static_cast<uint8_t>(v->kind()) > static_cast<uint8_t>(fb::ValueKind::Function)) {
    return Corrupt(what + " has an unknown kind");
  }
  out.kind = static_cast<ProgramValueInfo::Kind>(v->kind());
  if (v->dtype() != nullptr) out.dtype = ToDType(v->dtype());
  out.ndim = v->ndim();
  if (v->dims() != nullptr) {
    for (const flatbuffers::String* d : *v->dims()) out.dims.push_back(Str(d));
  }
  return out;
}

Status DecodeFunctions(const fb::Module* m, Program* p) {
  p->code = ToVector(m->code());
  if (m->functions() == nullptr) return Status::Ok();
  std::set<std::string> names;
  for (uint32_t i = 0; i < m->functions()->size(); ++i) {
    const fb::Function* f = m->functions()->Get(i);
    ProgramFunction out;
    out.name = Str(f->name());
    std::string what = StrFormat("function %u", i);
    if (out.name.empty()) return Corrupt(what + " has no name");
    if (!names.insert(out.name).second) return Corrupt("two functions are named '" + out.name + "'");
    what = "function '" + out.name + "'";
    if (f->params() != nullptr) {
      for (uint32_t j = 0; j < f->params()->size(); ++j) {
        KILN_ASSIGN_OR_RETURN(ProgramValueInfo v,
                              DecodeValueInfo(f->params()->Get(j), StrFormat("%s parameter %u", what.c_str(), j)));
        out.params.push_back(std::move(v));
      }
    }
    if (f->results() != nullptr) {
      for (uint32_t j = 0; j < f->results()->size(); ++j) {
        KILN_ASSIGN_OR_RETURN(ProgramValueInfo v,
                              DecodeValueInfo(f->results()->Get(j), StrFormat("%s result %u", what.c_str(), j)));
        out.results.push_back(std::move(v));
      }
    }
    out.register_count = f->register_count();
    out.shape_heap_size = f->shape_heap_size();
    out.code_begin = f->code_begin();
    out.code_end = f->code_end();
    if (out.register_count > kMaxRegisters) {
      return Corrupt(StrFormat("%s has %u registers (limit %u)", what.c_str(), out.register_count, kMaxRegisters));
    }
    if (out.shape_heap_size > kMaxShapeHeap) {
      return Corrupt(StrFormat("%s has %u shape-heap slots (limit %u)", what.c_str(), out.shape_heap_size,
                               kMaxShapeHeap));
    }
    if (out.code_begin > out.code_end || out.code_end > p->code.size()) {
      return Corrupt(StrFormat("%s has code range [%u, %u) outside the module's %zu code words", what.c_str(),
                               out.code_begin, out.code_end, p->code.size()));
    }
    p->functions.push_back(std::move(out));
  }
  return Status::Ok();
}

Status DecodeCallables(const fb::Module* m, Program* p) {
  if (m->callables() == nullptr) return Status::Ok();
  for (uint32_t i = 0; i < m->callables()->size(); ++i) {
    const fb::Callable* c = m->callables()->Get(i);
    ProgramCallable out;
    if (static_cast<uint8_t>(c->kind()) > static_cast<uint8_t>(fb::CallableKind::Function)) {
      return Corrupt(StrFormat("callable %u has an unknown kind %d", i, static_cast<int>(c->kind())));
    }
    out.kind = static_cast<CallableKind>(c->kind());
    out.name = Str(c->name());
    out.function_index = c->function_index();
    out.num_args = c->num_args();
    if (out.kind == CallableKind::kFunction) {
      if (out.function_index >= p->functions.size()) {
        return Corrupt(StrFormat("callable %u names function %u; the module has %zu", i, out.function_index,
                                 p->functions.size()));
      }
      if (out.name.empty()) out.name = p->functions[out.function_index].name;
    } else if (out.name.empty()) {
      return Corrupt(StrFormat("callable %u (%s) has no name", i, CallableKindName(out.kind)));
    }
    p->callables.push_back(std::move(out));
  }
  return Status::Ok();
}

Status DecodeConstants(const fb::Module* m, const uint8_t* weights, const FileBytes& bytes, Program* p) {
  if (m->constants() == nullptr) return Status::Ok();
  for (uint32_t i = 0; i < m->constants()->size(); ++i) {
    const fb::Constant* c = m->constants()->Get(i);
    ProgramConstant out;
    out.name = Str(c->name());
    std::string what = StrFormat("constant %u", i);
    if (!out.name.empty()) what += " ('" + out.name + "')";
    switch (c->kind()) {
      case fb::ConstantKind::Tensor: {
        out.kind = ProgramConstantKind::kTensor;
        DType dtype = ToDType(c->dtype());
        std::vector<int64_t> shape = ToVector(c->shape());
        KILN_ASSIGN_OR_RETURN(uint64_t nbytes, DenseBytes(dtype, shape, what));
        const fb::SegmentRef* ref = c->data();
        if (ref == nullptr) return Corrupt(what + " has no data");
        if (ref->size() != nbytes) {
          return Corrupt(StrFormat("%s holds %llu bytes; a %s%s tensor needs %llu", what.c_str(),
                                   static_cast<unsigned long long>(ref->size()), DTypeToString(dtype).c_str(),
                                   ShapeToString(shape).c_str(), static_cast<unsigned long long>(nbytes)));
        }
        if (!RangeInside(ref->offset(), ref->size(), p->weights_size)) {
          return Corrupt(StrFormat("%s lies outside the weights segment (%llu bytes)", what.c_str(),
                                   static_cast<unsigned long long>(p->weights_size)));
        }
        out.weights_offset = ref->offset();
        // Borrowed, zero copy: the tensor keeps the file's bytes alive. The
        // data is read-only when the file is mapped.
        void* data = const_cast<uint8_t*>(weights + ref->offset());
        out.value = Any(Tensor::Borrow(data, shape, dtype, bytes.owner));
        break;
      }
      case fb::ConstantKind::Int:
        out.kind = ProgramConstantKind::kInt;
        out.value = Any(static_cast<int64_t>(c->int_value()));
        break;
      case fb::ConstantKind::Float:
        out.kind = ProgramConstantKind::kFloat;
        out.value = Any(c->float_value());
        break;
      case fb::ConstantKind::String:
        out.kind = ProgramConstantKind::kString;
        out.value = Any(Str(c->string_value()));
        break;
      case fb::ConstantKind::Shape: {
        out.kind = ProgramConstantKind::kShape;
        std::vector<int64_t> shape = ToVector(c->shape());
        for (int64_t d : shape) {
          if (d < 0) return Corrupt(what + " is a shape with a negative dimension");
        }
        out.value = Any::Shape(std::move(shape));
        break;
      }
      default:
        return Corrupt(StrFormat("%s has an unknown kind %d", what.c_str(), static_cast<int>(c->kind())));
    }
    p->constants.push_back(std::move(out));
  }
  return Status::Ok();
}

Result<ProgramGraphArg> DecodeGraphArg(const fb::GraphArg* a, const ProgramGraph& g, size_t num_inputs,
                                       size_t num_outputs, const Program& p, const std::string& what) {
  if (a == nullptr) return Corrupt(what + " is missing");
  ProgramGraphArg out;
  if (static_cast<uint8_t>(a->kind()) > static_cast<uint8_t>(fb::GraphArgKind::Output)) {
    return Corrupt(what + " has an unknown kind");
  }
  out.kind = static_cast<GraphArgKind>(a->kind());
  out.index = a->index();
  out.byte_offset = a->byte_offset();
  out.dtype = ToDType(a->dtype());
  out.shape = ToVector(a->shape());
  KILN_ASSIGN_OR_RETURN(uint64_t nbytes, DenseBytes(out.dtype, out.shape, what));
  switch (out.kind) {
    case GraphArgKind::kInput:
      if (out.index >= num_inputs) return Corrupt(StrFormat("%s names input %u of %zu", what.c_str(), out.index, num_inputs));
      break;
    case GraphArgKind::kOutput:
      if (out.index >= num_outputs) {
        return Corrupt(StrFormat("%s names output %u of %zu", what.c_str(), out.index, num_outputs));
      }
      break;
    case GraphArgKind::kConstant: {
      if (out.index >= p.constants.size()) {
        return Corrupt(StrFormat("%s names constant %u of %zu", what.c_str(), out.index, p.constants.size()));
      }
      const ProgramConstant& c = p.constants[out.index];
      if (c.kind != ProgramConstantKind::kTensor) {
        return Corrupt(StrFormat("%s names constant %u, which is not a tensor", what.c_str(), out.index));
      }
      Tensor t = c.value.tensor();
      if (t.dtype() != out.dtype || t.shape() != out.shape) {
        return Corrupt(StrFormat("%s expects constant %u as %s%s; it is %s", what.c_str(), out.index,
                                 DTypeToString(out.dtype).c_str(), ShapeToString(out.shape).c_str(),
                                 t.TypeString().c_str()));
      }
      break;
    }
    case GraphArgKind::kStorage:
      if (out.byte_offset % kSegmentAlignment != 0 || !RangeInside(out.byte_offset, nbytes, g.arena_bytes)) {
        return Corrupt(StrFormat("%s: storage at offset %llu (%llu bytes) is not 64-byte aligned inside the "
                                 "%llu-byte arena",
                                 what.c_str(), static_cast<unsigned long long>(out.byte_offset),
                                 static_cast<unsigned long long>(nbytes),
                                 static_cast<unsigned long long>(g.arena_bytes)));
      }
      break;
  }
  return out;
}

Status DecodeGraphs(const fb::Module* m, Program* p) {
  if (m->graphs() == nullptr) return Status::Ok();
  for (uint32_t gi = 0; gi < m->graphs()->size(); ++gi) {
    const fb::Graph* fg = m->graphs()->Get(gi);
    ProgramGraph g;
    g.function = Str(fg->function());
    g.arena_bytes = fg->arena_bytes();
    std::string what = "graph '" + g.function + "'";
    size_t num_inputs = fg->inputs() ? fg->inputs()->size() : 0;
    size_t num_outputs = fg->outputs() ? fg->outputs()->size() : 0;
    for (size_t i = 0; i < num_inputs; ++i) {
      std::string w = StrFormat("%s input %zu", what.c_str(), i);
      KILN_ASSIGN_OR_RETURN(ProgramGraphArg a, DecodeGraphArg(fg->inputs()->Get(i), g, num_inputs, num_outputs, *p, w));
      if (a.kind != GraphArgKind::kInput || a.index != i) return Corrupt(w + " does not describe input " + std::to_string(i));
      g.inputs.push_back(std::move(a));
    }
    for (size_t i = 0; i < num_outputs; ++i) {
      std::string w = StrFormat("%s output %zu", what.c_str(), i);
      KILN_ASSIGN_OR_RETURN(ProgramGraphArg a,
                            DecodeGraphArg(fg->outputs()->Get(i), g, num_inputs, num_outputs, *p, w));
      if (a.kind == GraphArgKind::kOutput && a.index != i) return Corrupt(w + " comes from another output");
      g.outputs.push_back(std::move(a));
    }
    if (fg->nodes() != nullptr) {
      for (uint32_t ni = 0; ni < fg->nodes()->size(); ++ni) {
        const fb::GraphNode* fn = fg->nodes()->Get(ni);
        ProgramGraphNode node;
        node.callable = fn->callable();
        std::string w = StrFormat("%s node %u", what.c_str(), ni);
        if (node.callable >= p->callables.size()) {
          return Corrupt(StrFormat("%s calls callable %u of %zu", w.c_str(), node.callable, p->callables.size()));
        }
        CallableKind kind = p->callables[node.callable].kind;
        if (kind != CallableKind::kKernel && kind != CallableKind::kPacked) {
          return Corrupt(w + " calls a " + CallableKindName(kind) + "; graphs call only kernels and packed functions");
        }
        if (fn->args() != nullptr) {
          for (uint32_t ai = 0; ai < fn->args()->size(); ++ai) {
            KILN_ASSIGN_OR_RETURN(ProgramGraphArg a, DecodeGraphArg(fn->args()->Get(ai), g, num_inputs, num_outputs,
                                                                    *p, StrFormat("%s argument %u", w.c_str(), ai)));
            node.args.push_back(std::move(a));
          }
        }
        g.nodes.push_back(std::move(node));
      }
    }
    p->graphs.push_back(std::move(g));
  }
  return Status::Ok();
}

}  // namespace

const char* CallableKindName(CallableKind kind) {
  switch (kind) {
    case CallableKind::kBuiltin: return "builtin";
    case CallableKind::kPacked: return "packed function";
    case CallableKind::kKernel: return "kernel";
    case CallableKind::kFunction: return "function";
  }
  return "callable";
}

int32_t Program::FindFunction(const std::string& name) const {
  for (size_t i = 0; i < functions.size(); ++i) {
    if (functions[i].name == name) return static_cast<int32_t>(i);
  }
  return -1;
}

int32_t Program::FindGraph(const std::string& name) const {
  for (size_t i = 0; i < graphs.size(); ++i) {
    if (graphs[i].function == name) return static_cast<int32_t>(i);
  }
  return -1;
}

LinkedProgram::~LinkedProgram() = default;

namespace {

// The size prefix of a .vmfb's FlatBuffer after checking the identifier and
// that the FlatBuffer fits in the file.
Result<uint32_t> CheckHeader(const uint8_t* data, size_t size) {
  // [uint32 size][uint32 root offset][identifier]...
  if (data == nullptr || size < 12) {
    return DataLoss(StrFormat("not a .vmfb file: %zu bytes is too small", size));
  }
  if (std::memcmp(data + 8, fb::ModuleIdentifier(), 4) != 0) {
    return DataLoss("not a .vmfb file (no 'KILN' identifier)");
  }
  // The verifier checks alignment relative to the first byte; 8-byte fields
  // are only safe to read when that byte is itself 8-byte aligned.
  if (reinterpret_cast<uintptr_t>(data) % 8 != 0) {
    return InvalidArgument(StrFormat(".vmfb bytes must start at an 8-byte aligned address (this buffer is at %p)",
                                     static_cast<const void*>(data)));
  }
  uint32_t fb_size;
  std::memcpy(&fb_size, data, 4);
  if (fb_size > size - 4) {
    return DataLoss(StrFormat("truncated .vmfb: the header needs %llu bytes, the file has %zu",
                              static_cast<unsigned long long>(fb_size) + 4, size));
  }
  return fb_size;
}

}  // namespace

Result<VmfbFileInfo> PeekVmfbInfo(const FileBytes& bytes) {
  KILN_ASSIGN_OR_RETURN(uint32_t fb_size, CheckHeader(bytes.data, bytes.size));
  // Only the root table and the three frozen fields are verified: the rest may
  // follow a newer schema this runtime does not know.
  size_t fb_end = static_cast<size_t>(fb_size) + 4;
  uint32_t root;
  std::memcpy(&root, bytes.data + 4, 4);
  if (root % 4 != 0 || static_cast<uint64_t>(root) + 4 + 4 > fb_end) {
    return Corrupt("the FlatBuffer root offset is out of range");
  }
  flatbuffers::Verifier verifier(bytes.data, fb_end, /*max_depth=*/8, /*max_tables=*/16);
  const fb::Module* m = fb::GetSizePrefixedModule(bytes.data);
  // Generated tables hide their flatbuffers::Table base; it is the same bytes.
  const auto* t = reinterpret_cast<const flatbuffers::Table*>(m);
  bool ok = t->VerifyTableStart(verifier) &&
            t->VerifyField<fb::FormatVersion>(verifier, fb::Module::VT_VERSION, 2) &&
            t->VerifyOffset(verifier, fb::Module::VT_PRODUCER) && verifier.VerifyString(m->producer()) &&
            t->VerifyOffset(verifier, fb::Module::VT_TARGET) && verifier.VerifyTable(m->target());
  if (!ok) return Corrupt("the header fields (version, producer, target) fail verification");
  if (m->version() == nullptr) return Corrupt("no format version");
  VmfbFileInfo info;
  info.format_major = m->version()->major();
  info.format_minor = m->version()->minor();
  info.producer = Str(m->producer());
  info.target = DecodeTarget(m->target());
  info.file_bytes = bytes.size;
  return info;
}

Result<VmfbFileInfo> PeekVmfbFileInfo(const std::string& path) {
  Result<FileBytes> bytes = MapFile(path);
  if (!bytes.ok()) return bytes.TakeStatus();
  Result<VmfbFileInfo> info = PeekVmfbInfo(*bytes);
  if (!info.ok()) {
    Status s = info.TakeStatus();
    s.Annotate("reading " + path);
    return s;
  }
  return info;
}

namespace {

// The checksum a 1.1+ file stores for a segment, checked against its bytes.
// `segment` names it in messages ("weights", "native library 0").
Result<uint64_t> ReadChecksum(const fb::Checksum* c, const std::string& segment) {
  if (c == nullptr) return Corrupt("the " + segment + " segment has no checksum (format 1.1 files carry one)");
  if (c->algorithm() != fb::ChecksumAlgorithm::XXH3_64) {
    return Corrupt(StrFormat("the %s segment's checksum has an unknown algorithm %d", segment.c_str(),
                             static_cast<int>(c->algorithm())));
  }
  return c->value();
}

Status CompareChecksum(const uint8_t* data, uint64_t size, uint64_t expected, const std::string& segment) {
  uint64_t actual = SegmentChecksum(data, static_cast<size_t>(size));
  if (actual == expected) return Status::Ok();
  return DataLoss(StrFormat("damaged .vmfb: the %s segment (%llu bytes) does not match its checksum (%s %016llx "
                            "in the file, %016llx computed); the file was changed after it was written",
                            segment.c_str(), static_cast<unsigned long long>(size), kSegmentChecksumName,
                            static_cast<unsigned long long>(expected), static_cast<unsigned long long>(actual)));
}

// The launch table of a GPU module; ValidateGpuModules checks it.
Status DecodeGpuFunctions(const fb::GpuModule* g, ProgramGpuModule* out) {
  if (g->functions() == nullptr) return Status::Ok();
  for (const fb::GpuFunction* f : *g->functions()) {
    ProgramGpuFunction fn;
    fn.name = Str(f->name());
    fn.num_args = f->num_args();
    if (f->params() != nullptr) {
      for (const fb::GpuParam* q : *f->params()) {
        ProgramGpuParam p;
        p.kind = static_cast<GpuParamKind>(q->kind());
        p.arg = q->arg();
        p.dim = q->dim();
        p.workspace = q->workspace();
        fn.params.push_back(p);
      }
    }
    if (f->workspaces() != nullptr) {
      for (const fb::GpuWorkspace* w : *f->workspaces()) {
        ProgramGpuWorkspace ws;
        ws.name = Str(w->name());
        ws.dtype = ToDType(w->dtype());
        if (w->shape() != nullptr)
          for (const flatbuffers::String* d : *w->shape()) ws.shape.push_back(Str(d));
        fn.workspaces.push_back(std::move(ws));
      }
    }
    if (f->kernels() != nullptr) {
      for (const fb::GpuKernel* k : *f->kernels()) fn.kernels.push_back({Str(k->name()), Str(k->grid_x()), k->block_x()});
    }
    out->functions.push_back(std::move(fn));
  }
  return Status::Ok();
}

}  // namespace

std::string NoChecksumsNote(const Program& program) {
  if (program.has_checksums) return std::string();
  return StrFormat("format %u.%u file: its segments carry no checksums (added in %u.%u), so damage to its kernels "
                   "or weights cannot be detected; recompile it to add them",
                   program.format_major, program.format_minor, kVmfbRuntimeFormatMajor, kVmfbChecksumsSinceMinor);
}

Result<Program> DecodeVmfb(const FileBytes& bytes, const DecodeOptions& options) {
  const uint8_t* data = bytes.data;
  size_t size = bytes.size;
  KILN_ASSIGN_OR_RETURN(uint32_t fb_size, CheckHeader(data, size));
  // Verified with the size prefix included: the writer aligns the buffer as a
  // whole, so offsets are checked relative to the file's first byte.
  flatbuffers::Verifier verifier(data, static_cast<size_t>(fb_size) + 4, /*max_depth=*/64,
                                 /*max_tables=*/1u << 22);
  if (!fb::VerifySizePrefixedModuleBuffer(verifier)) return Corrupt("the FlatBuffer header fails verification");
  const fb::Module* m = fb::GetSizePrefixedModule(data);

  Program p;
  if (m->version() == nullptr) return Corrupt("no format version");
  p.format_major = m->version()->major();
  p.format_minor = m->version()->minor();
  if (p.format_major > kVmfbRuntimeFormatMajor) {
    return Incompatible(StrFormat("file format %u.%u is newer than this runtime's %u.%u", p.format_major,
                                  p.format_minor, kVmfbRuntimeFormatMajor, kVmfbRuntimeFormatMinor));
  }
  if (p.format_major < kVmfbRuntimeFormatMajor) {
    return Incompatible(StrFormat("file format %u.%u is older than this runtime's %u.%u and no longer supported",
                                  p.format_major, p.format_minor, kVmfbRuntimeFormatMajor, kVmfbRuntimeFormatMinor));
  }
  p.producer = Str(m->producer());
  p.target = DecodeTarget(m->target());

  // Segments start at the end of the size-prefixed FlatBuffer, rounded up.
  uint64_t base = (static_cast<uint64_t>(fb_size) + 4 + kSegmentAlignment - 1) / kSegmentAlignment * kSegmentAlignment;
  auto segment = [&](const fb::SegmentRef* ref, const std::string& what) -> Result<const uint8_t*> {
    if (ref == nullptr || ref->size() == 0) return data;  // empty: never dereferenced
    if (ref->offset() % kSegmentAlignment != 0) return Corrupt(what + " segment is not 64-byte aligned");
    uint64_t start;
    if (__builtin_add_overflow(base, ref->offset(), &start) || !RangeInside(start, ref->size(), size)) {
      return DataLoss(StrFormat("truncated .vmfb: the %s segment ends at byte %llu, the file has %zu", what.c_str(),
                                static_cast<unsigned long long>(base + ref->offset() + ref->size()), size));
    }
    return data + start;
  };

  KILN_ASSIGN_OR_RETURN(const uint8_t* weights, segment(m->weights(), "weights"));
  p.weights_size = m->weights() ? m->weights()->size() : 0;
  p.has_checksums = p.format_minor >= kVmfbChecksumsSinceMinor;
  if (p.has_checksums) {
    KILN_ASSIGN_OR_RETURN(p.weights_checksum, ReadChecksum(m->weights_checksum(), "weights"));
    if (options.verify_weights) {
      KILN_RETURN_IF_ERROR(CompareChecksum(weights, p.weights_size, p.weights_checksum, "weights"));
      p.weights_verified = true;
    }
  }

  KILN_RETURN_IF_ERROR(DecodeFunctions(m, &p));
  KILN_RETURN_IF_ERROR(DecodeCallables(m, &p));
  KILN_RETURN_IF_ERROR(DecodeConstants(m, weights, bytes, &p));
  if (m->native_libraries() != nullptr) {
    for (uint32_t i = 0; i < m->native_libraries()->size(); ++i) {
      const fb::NativeLibrary* l = m->native_libraries()->Get(i);
      ProgramNativeLibrary out;
      out.format = Str(l->format());
      out.target = DecodeTarget(l->target());
      if (l->kernel_names() != nullptr) {
        for (const flatbuffers::String* s : *l->kernel_names()) out.kernel_names.push_back(Str(s));
      }
      // Advisory (the profiler's roofline): a list that does not match the
      // kernels is dropped, not an error.
      if (l->kernel_costs() != nullptr && l->kernel_costs()->size() == out.kernel_names.size()) {
        for (const fb::KernelCost* c : *l->kernel_costs())
          out.kernel_costs.push_back({c ? Str(c->flops()) : "", c ? Str(c->bytes()) : ""});
      }
      std::string what = StrFormat("native library %u", i);
      KILN_ASSIGN_OR_RETURN(out.data, segment(l->data(), what));
      out.size = l->data() ? l->data()->size() : 0;
      // Always: a changed byte of machine code can do anything once called.
      if (p.has_checksums) {
        KILN_ASSIGN_OR_RETURN(out.checksum, ReadChecksum(l->checksum(), what));
        KILN_RETURN_IF_ERROR(CompareChecksum(out.data, out.size, out.checksum, what));
      }
      p.native_libraries.push_back(std::move(out));
    }
  }
  if (m->gpu_modules() != nullptr) {
    for (uint32_t i = 0; i < m->gpu_modules()->size(); ++i) {
      const fb::GpuModule* g = m->gpu_modules()->Get(i);
      std::string what = StrFormat("GPU module %u", i);
      ProgramGpuModule out;
      out.format = Str(g->format());
      out.arch = Str(g->arch());
      KILN_ASSIGN_OR_RETURN(const uint8_t* ptx, segment(g->ptx(), what));
      out.ptx = reinterpret_cast<const char*>(ptx);
      out.ptx_size = g->ptx() ? g->ptx()->size() : 0;
      if (p.has_checksums) {
        KILN_ASSIGN_OR_RETURN(uint64_t checksum, ReadChecksum(g->checksum(), what));
        KILN_RETURN_IF_ERROR(CompareChecksum(ptx, out.ptx_size, checksum, what));
      }
      if (g->cubin() != nullptr && g->cubin()->size() > 0) {
        std::string cubin_what = what + " cubin";
        KILN_ASSIGN_OR_RETURN(out.cubin, segment(g->cubin(), cubin_what));
        out.cubin_size = g->cubin()->size();
        if (p.has_checksums) {
          KILN_ASSIGN_OR_RETURN(uint64_t checksum, ReadChecksum(g->cubin_checksum(), cubin_what));
          KILN_RETURN_IF_ERROR(CompareChecksum(out.cubin, out.cubin_size, checksum, cubin_what));
        }
      }
      KILN_RETURN_IF_ERROR(DecodeGpuFunctions(g, &out));
      p.gpu_modules.push_back(std::move(out));
    }
    KILN_RETURN_IF_ERROR(ValidateGpuModules(p));
  }
  KILN_RETURN_IF_ERROR(DecodeGraphs(m, &p));
  return p;
}

Result<std::shared_ptr<const LinkedProgram>> LoadVmfb(FileBytes bytes, const LinkOptions& options) {
  auto linked = std::make_shared<LinkedProgram>();
  linked->storage = bytes.owner;
  DecodeOptions decode;
  decode.verify_weights = options.verify_weights;
  KILN_ASSIGN_OR_RETURN(linked->program, DecodeVmfb(bytes, decode));
  const Program& p = linked->program;
  linked->thread_pool = options.thread_pool ? options.thread_pool : ThreadPool::Global();

  for (size_t i = 0; i < p.native_libraries.size(); ++i) {
    const ProgramNativeLibrary& lib = p.native_libraries[i];
    std::string what = StrFormat("native library %zu", i);
    if (lib.format != "elf-shared-object") {
      return Unimplemented(StrFormat("%s has format '%s'; this runtime loads 'elf-shared-object'", what.c_str(),
                                     lib.format.c_str()));
    }
    KILN_RETURN_IF_ERROR_CTX(CheckHostArchitecture(lib.data, lib.size, lib.target.triple), "%s", what.c_str());
    KILN_RETURN_IF_ERROR_CTX(CheckHostCpuFeatures(lib.target.features), "%s (cpu '%s')", what.c_str(),
                             lib.target.cpu.c_str());
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<NativeLibrary> loaded, NativeLibrary::LoadFromMemory(lib.data, lib.size, what));
    linked->libraries.push_back(std::move(loaded));
  }

  // GPU kernel functions by name; with a GpuLinker they become packed
  // functions that launch on its device, and tensor constants move there.
  std::map<std::string, std::pair<size_t, size_t>> gpu_functions;
  for (size_t i = 0; i < p.gpu_modules.size(); ++i)
    for (size_t j = 0; j < p.gpu_modules[i].functions.size(); ++j)
      gpu_functions[p.gpu_modules[i].functions[j].name] = {i, j};
  // A GPU file may have no kernels of its own (every operator went to a GPU
  // library, e.g. cuBLAS); its constants still belong on the device.
  const bool gpu_program = !p.gpu_modules.empty() || p.target.triple == kGpuTargetTriple;
  if (gpu_program && options.gpu) {
    linked->gpu = options.gpu;
    for (const ProgramGpuModule& g : p.gpu_modules) KILN_RETURN_IF_ERROR(options.gpu->LoadModule(g));
    for (ProgramConstant& c : linked->program.constants) {
      if (c.kind != ProgramConstantKind::kTensor) continue;
      KILN_ASSIGN_OR_RETURN(c.value, options.gpu->UploadConstant(c.value));
    }
  }
  std::vector<std::string> gpu_only;

  std::vector<std::string> missing;
  std::vector<std::string> mismatched;
  for (const ProgramCallable& c : p.callables) {
    ResolvedCallable r;
    r.kind = c.kind;
    r.name = c.name;
    r.function_index = c.function_index;
    switch (c.kind) {
      case CallableKind::kBuiltin:
        if (options.resolve_builtin) {
          r.builtin = options.resolve_builtin(c.name);
          if (r.builtin < 0) missing.push_back("builtin '" + c.name + "'");
        }
        break;
      case CallableKind::kPacked: {
        // The device's own functions (GPU libraries on its stream) first.
        if (gpu_program && options.gpu) {
          Result<PackedFunc> fn = options.gpu->ResolvePacked(c.name);
          if (fn.ok()) {
            r.packed = std::move(fn).value();
            break;
          }
          if (fn.status().code() != StatusCode::kNotFound) return fn.TakeStatus();
        }
        Result<PackedFunc> fn = LookupGlobalFunction(c.name);
        if (fn.ok()) {
          r.packed = std::move(fn).value();
        } else if (gpu_program && !options.gpu) {
          gpu_only.push_back("'" + c.name + "' (" + p.target.cpu + ")");
        } else {
          missing.push_back("packed function '" + c.name + "'");
        }
        break;
      }
      case CallableKind::kKernel: {
        auto gpu = gpu_functions.find(c.name);
        if (gpu != gpu_functions.end()) {
          const ProgramGpuModule& g = p.gpu_modules[gpu->second.first];
          const ProgramGpuFunction& f = g.functions[gpu->second.second];
          if (!options.gpu) {
            gpu_only.push_back("'" + c.name + "' (" + g.arch + ")");
            break;
          }
          KILN_ASSIGN_OR_RETURN(r.packed, options.gpu->Resolve(g, f));
          r.kind = CallableKind::kPacked;
          r.kernel_num_args = f.num_args;
          break;
        }
        for (const auto& lib : linked->libraries) {
          Result<const kiln_kernel_entry*> e = lib->Find(c.name);
          if (e.ok()) {
            r.kernel = (*e)->fn;
            r.kernel_num_args = (*e)->num_args;
            break;
          }
        }
        if (r.kernel == nullptr) {
          missing.push_back("kernel '" + c.name + "'");
        } else if (c.num_args >= 0 && r.kernel_num_args >= 0 && c.num_args != r.kernel_num_args) {
          mismatched.push_back(StrFormat("kernel '%s' takes %d arguments in its library; the program says %d",
                                         c.name.c_str(), r.kernel_num_args, c.num_args));
        }
        if (r.kernel_num_args < 0) r.kernel_num_args = c.num_args;
        break;
      }
      case CallableKind::kFunction:
        break;
    }
    linked->callables.push_back(std::move(r));
  }
  if (!gpu_only.empty()) {
    std::string list;
    for (size_t i = 0; i < gpu_only.size() && i < 3; ++i) list += (i ? ", " : "") + gpu_only[i];
    if (gpu_only.size() > 3) list += StrFormat(" and %zu more", gpu_only.size() - 3);
    return FailedPrecondition(StrFormat("this module's kernels run on a GPU (%s); it needs a CUDA device: "
                                        "kiln-run --device=cuda, or a .vmfb compiled without --target=cuda",
                                        list.c_str()));
  }
  if (!missing.empty()) {
    std::string list;
    for (const std::string& s : missing) list += (list.empty() ? "" : ", ") + s;
    return NotFound(StrFormat("cannot resolve %zu callable%s: %s", missing.size(), missing.size() == 1 ? "" : "s",
                              list.c_str()));
  }
  if (!mismatched.empty()) {
    std::string list;
    for (const std::string& s : mismatched) list += (list.empty() ? "" : "; ") + s;
    return Incompatible(list);
  }
  return std::shared_ptr<const LinkedProgram>(std::move(linked));
}

Result<std::shared_ptr<const LinkedProgram>> LoadVmfbFile(const std::string& path, const LinkOptions& options) {
  Result<FileBytes> bytes = MapFile(path);
  if (!bytes.ok()) return bytes.TakeStatus();
  Result<std::shared_ptr<const LinkedProgram>> r = LoadVmfb(std::move(bytes).value(), options);
  if (!r.ok()) {
    Status s = r.TakeStatus();
    s.Annotate("loading " + path);
    return s;
  }
  return r;
}

}  // namespace kiln
