// vm.builtin.loop: a loop whose body is a bytecode function (ONNX Loop and
// Scan; vm/builtins.def gives the operands). The interpreter hands the call
// here because the body runs in the next frame of this context, as an
// ordinary function call does: the frames, their planned storage and the
// reuse caches serve every iteration, and the call depth grows by one
// however many iterations run (a tail-recursive function would need one
// frame per iteration).
//
// Per iteration the body returns its fields as a tuple (one field: the value
// itself). The fields are copied out and the tuple dropped before the next
// call, so the body's make_tuple site may reuse it; the tensors it returned
// are held here, so its allocation sites never hand them out again while a
// later iteration runs.
//
// Scan inputs are sliced along axis 0 (the importer moves the scanned axis
// first and reverses backward scans): a view where the slice starts on a
// 64-byte boundary (generated kernels require that alignment), a copy
// otherwise. Scan outputs are stacked along a new axis 0 when the loop ends.
#include <cstring>

#include "vm/call_state.h"
#include "vm/module_impl.h"

namespace kiln {
namespace vm {
namespace {

constexpr uint64_t kKernelAlign = 64;

Result<Tensor> NewLoopTensor(Span<const int64_t> dims, DType dtype) {
  CallState* s = CurrentCallState();
  Allocator* allocator = s != nullptr ? s->allocator : DefaultCpuAllocator();
  KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::Empty(dims, dtype, allocator));
  if (s != nullptr) t.object()->owner = s->keep_alive;
  return t;
}

// The truth of a one-element tensor (bool or any integer / float type).
Result<bool> Truth(const Any& v, const char* what) {
  if (v.is_int()) return v.int_value() != 0;
  if (!v.is_tensor()) return InvalidArgument(std::string(what) + " must be an int or a tensor, got " + v.Describe());
  if (v.tensor().NumElements() != 1) {
    return InvalidArgument(std::string(what) + " must be a one-element tensor, got " + v.tensor().TypeString());
  }
  // On a GPU the value is copied to the host after the body's kernels.
  KILN_ASSIGN_OR_RETURN(Tensor t, ReadableOnHost(v.tensor(), CallDeviceMemory(), what));
  const auto* p = static_cast<const uint8_t*>(t.raw_data());
  DType d = t.dtype();
  if (d.code == kDLFloat && d.bits == 32) {
    float x;
    std::memcpy(&x, p, 4);
    return x != 0;
  }
  if (d.code == kDLFloat && d.bits == 64) {
    double x;
    std::memcpy(&x, p, 8);
    return x != 0;
  }
  for (size_t i = 0; i < d.bytes(); ++i)
    if (p[i] != 0) return true;
  return false;
}

Result<Any> Scalar(DType dtype, int64_t v) {
  KILN_ASSIGN_OR_RETURN(Tensor t, NewLoopTensor({}, dtype));
  const uint8_t b = static_cast<uint8_t>(v != 0);
  // Device memory on a GPU: written through the device's copy.
  if (dtype.bits == 64) {
    KILN_RETURN_IF_ERROR(WriteFromHost(t, &v, 8, CallDeviceMemory(), "vm.builtin.loop"));
  } else {
    KILN_RETURN_IF_ERROR(WriteFromHost(t, &b, 1, CallDeviceMemory(), "vm.builtin.loop"));
  }
  return Any(t);
}

// Slice `i` of `t` along axis 0.
Result<Any> Slice(const Tensor& t, int64_t i) {
  std::vector<int64_t> dims(t.shape().begin() + 1, t.shape().end());
  size_t bytes = t.NumBytes() / static_cast<size_t>(t.shape()[0]);
  auto* data = static_cast<uint8_t*>(t.raw_data()) + static_cast<size_t>(i) * bytes;
  if (reinterpret_cast<uintptr_t>(data) % kKernelAlign == 0) {
    Tensor view = Tensor::Borrow(data, dims, t.dtype(), t.object());
    view.object()->dl.device = t.dl()->device;
    return Any(view);
  }
  KILN_ASSIGN_OR_RETURN(Tensor copy, NewLoopTensor(dims, t.dtype()));
  KILN_RETURN_IF_ERROR(CopyBytes(copy, 0, t, static_cast<size_t>(i) * bytes, bytes, CallDeviceMemory(),
                                 "vm.builtin.loop: a scan input's slice"));
  return Any(copy);
}

}  // namespace

Status ContextImpl::RunLoop(const Arg* a, uint32_t num_args, Frame& frame, const ValueSource& src,
                            const ProgramFunction& meta, int depth, Any* out) {
  const std::string where = meta.name + ": vm.builtin.loop: ";
  const ResolvedCallable& body_callable = module_->linked().callables[a[0].value];
  const int32_t body = static_cast<int32_t>(body_callable.function_index);
  const bool is_scan = (a[1].value & 1) != 0;
  const bool has_max_trip = (a[1].value & 2) != 0;
  const bool use_cond = (a[1].value & 4) != 0;
  const size_t n_state = static_cast<size_t>(a[2].value);
  const size_t n_scan_in = static_cast<size_t>(a[3].value);
  const size_t n_scan_out = static_cast<size_t>(a[4].value);
  Any tmp;
  const Any max_trip = ArgValue(a[5], frame, src, &tmp);
  const Any cond_in = ArgValue(a[6], frame, src, &tmp);
  const size_t first_value = 7 + 4 * n_scan_out;

  // The trip count: M, the scan length, or unbounded (the condition ends it).
  int64_t trips = -1;
  if (has_max_trip && max_trip.is_int()) {
    trips = std::max<int64_t>(0, max_trip.int_value());
  } else if (has_max_trip) {
    Tensor m = max_trip.is_tensor() ? max_trip.tensor() : Tensor();
    if (!m.defined() || m.NumElements() != 1 || m.dtype() != DType::Int64()) {
      return InvalidArgument(where + "the trip count must be an int or one int64, got " + max_trip.Describe());
    }
    KILN_ASSIGN_OR_RETURN(m, ReadableOnHost(m, CallDeviceMemory(), where + "the trip count"));
    trips = std::max<int64_t>(0, *m.data<int64_t>());
  }
  std::vector<Tensor> scan_in;
  for (size_t k = 0; k < n_scan_in; ++k) {
    Any t;
    const Any& v = ArgValue(a[first_value + n_state + k], frame, src, &t);
    if (!v.is_tensor() || v.tensor().ndim() < 1 || !v.tensor().IsCompact()) {
      return InvalidArgument(where + "scan input " + std::to_string(k) + " must be a compact tensor of rank >= 1, got " +
                             v.Describe());
    }
    scan_in.push_back(v.tensor());
    int64_t len = scan_in.back().shape()[0], first = scan_in[0].shape()[0];
    if (len != first) {
      return InvalidArgument(StrFormat("%sscan inputs have lengths %lld and %lld along the scanned axis", where.c_str(),
                                       static_cast<long long>(first), static_cast<long long>(len)));
    }
  }
  // Slices never run past the scan inputs (a trip count may bound them further).
  if (!scan_in.empty()) trips = trips < 0 ? scan_in[0].shape()[0] : std::min(trips, scan_in[0].shape()[0]);
  if (trips < 0 && !use_cond) return InvalidArgument(where + "no trip count, scan input or condition would end the loop");
  bool running = true;
  if (use_cond) { KILN_ASSIGN_OR_RETURN(running, Truth(cond_in, (where + "the condition").c_str())); }

  // The body's arguments: [iteration, condition,] states, [slices,] captured.
  const size_t lead = is_scan ? 0 : 2;
  const size_t n_captured = num_args - first_value - n_state - n_scan_in;
  std::vector<Any> args(lead + n_state + n_scan_in + n_captured);
  for (size_t j = 0; j < n_state; ++j) {
    Any t;
    args[lead + j] = ArgValue(a[first_value + j], frame, src, &t);
  }
  for (size_t j = 0; j < n_captured; ++j) {
    Any t;
    args[lead + n_state + n_scan_in + j] = ArgValue(a[first_value + n_state + n_scan_in + j], frame, src, &t);
  }
  const size_t n_fields = (is_scan ? 0 : 1) + n_state + n_scan_out;
  std::vector<std::vector<Tensor>> scans(n_scan_out);
  std::vector<Any> fields;
  for (int64_t i = 0; running && (trips < 0 || i < trips); ++i) {
    if (!is_scan) {
      KILN_ASSIGN_OR_RETURN(args[0], Scalar(DType::Int64(), i));
      KILN_ASSIGN_OR_RETURN(args[1], Scalar(DType::Bool(), 1));
    }
    for (size_t k = 0; k < n_scan_in; ++k) {
      KILN_ASSIGN_OR_RETURN(args[lead + n_state + k], Slice(scan_in[k], i));
    }
    Any result;
    KILN_RETURN_IF_ERROR(Execute(body, Span<const Any>(args.data(), args.size()), &result, depth + 1));
    if (result.is_tuple()) {
      fields = result.tuple_fields();
    } else {
      fields.assign(1, result);
    }
    result = Any();
    if (fields.size() != n_fields) {
      return InvalidArgument(StrFormat("%sthe body returned %zu values, expected %zu", where.c_str(), fields.size(), n_fields));
    }
    size_t f = 0;
    if (!is_scan) {
      if (use_cond) { KILN_ASSIGN_OR_RETURN(running, Truth(fields[0], (where + "the body's condition").c_str())); }
      f = 1;
    }
    for (size_t j = 0; j < n_state; ++j) args[lead + j] = std::move(fields[f + j]);
    for (size_t k = 0; k < n_scan_out; ++k) {
      const Any& v = fields[f + n_state + k];
      if (!v.is_tensor() || !v.tensor().IsCompact()) {
        return InvalidArgument(where + "scan output " + std::to_string(k) + " must be a compact tensor, got " +
                               v.Describe());
      }
      if (!scans[k].empty() && (scans[k][0].shape() != v.tensor().shape() || scans[k][0].dtype() != v.tensor().dtype())) {
        return InvalidArgument(StrFormat("%sscan output %zu is %s in iteration %lld but %s in iteration 0; Kiln stacks "
                                         "scan outputs of one shape",
                                         where.c_str(), k, v.tensor().TypeString().c_str(), static_cast<long long>(i),
                                         scans[k][0].TypeString().c_str()));
      }
      scans[k].push_back(v.tensor());
    }
    fields.clear();
  }

  std::vector<Any> results;
  for (size_t j = 0; j < n_state; ++j) results.push_back(std::move(args[lead + j]));
  for (size_t k = 0; k < n_scan_out; ++k) {
    // Without iterations the per-iteration shape and dtype come from the program.
    std::vector<int64_t> dims;
    DType dtype;
    if (scans[k].empty()) {
      Any t;
      const Any& shape = ArgValue(a[7 + 4 * k], frame, src, &t);
      if (!shape.is_shape()) return InvalidArgument(where + "expected a shape, got " + shape.Describe());
      dims = shape.shape_dims();
      dtype = DType{static_cast<uint8_t>(a[8 + 4 * k].value), static_cast<uint8_t>(a[9 + 4 * k].value),
                    static_cast<uint16_t>(a[10 + 4 * k].value)};
    } else {
      dims = scans[k][0].shape();
      dtype = scans[k][0].dtype();
    }
    dims.insert(dims.begin(), static_cast<int64_t>(scans[k].size()));
    KILN_ASSIGN_OR_RETURN(Tensor stacked, NewLoopTensor(dims, dtype));
    size_t at = 0;
    for (const Tensor& t : scans[k]) {
      // memcpy on the CPU; device-to-device copies on a GPU.
      KILN_RETURN_IF_ERROR(CopyBytes(stacked, at, t, 0, t.NumBytes(), CallDeviceMemory(), where + "stacking a scan output"));
      at += t.NumBytes();
    }
    results.push_back(Any(stacked));
  }
  *out = Any::Tuple(std::move(results));
  return Status::Ok();
}

}  // namespace vm
}  // namespace kiln
