"""Triton Python-backend model serving a Kiln ``.vmfb`` (written by ``python -m kiln.triton export``).

Triton runs this file in one stub process per model instance. Each instance loads the
module once and keeps one call context, so instances run in parallel with their own
threads and scratch memory. ``execute`` gets the batch of requests Triton's dynamic
batcher gathered: when the model has a batch dimension, the requests' inputs are
concatenated along it and answered with one call whose outputs are split back per request;
requests whose other dimensions differ (or a model without a batch dimension) are called
one by one. A Kiln error becomes that request's error response, with Kiln's message.

Needs ``kiln`` and numpy importable in the stub's interpreter. The stub's embedded Python
ignores ``PYTHONPATH``; a ``kiln`` that is not installed in the venv (the build tree's
``build/python``) is found through ``KILN_TRITON_PYTHONPATH``, which ``python -m kiln.triton
serve`` sets to where it imported ``kiln`` from.
"""

import json
import os
import sys

for _path in reversed(os.environ.get("KILN_TRITON_PYTHONPATH", "").split(os.pathsep)):
    if _path and _path not in sys.path:
        sys.path.insert(0, _path)

import numpy as np  # noqa: E402
import triton_python_backend_utils as pb_utils  # noqa: E402

import kiln  # noqa: E402


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        parameters = {k: v["string_value"] for k, v in config.get("parameters", {}).items()}
        self.function_name = parameters.get("kiln_function", "main")
        self.batched = config.get("max_batch_size", 0) > 0
        self.input_names = [i["name"] for i in config["input"]]
        self.output_names = [o["name"] for o in config["output"]]
        path = os.path.join(args["model_repository"], args["model_version"], "model.vmfb")
        self.module = kiln.load(path)
        threads = int(parameters.get("kiln_threads", "1"))
        self.context = self.module.context(threads=threads)
        self.function = self.context[self.function_name]

    def _call(self, inputs):
        outputs = self.function(*inputs)
        if not isinstance(outputs, tuple):
            outputs = (outputs,)
        return [np.asarray(o) for o in outputs]

    def _respond(self, arrays):
        return pb_utils.InferenceResponse(
            output_tensors=[pb_utils.Tensor(n, a) for n, a in zip(self.output_names, arrays)])

    def _one_by_one(self, per_request):
        responses = []
        for inputs in per_request:
            try:
                responses.append(self._respond(self._call(inputs)))
            except kiln.Error as e:
                responses.append(pb_utils.InferenceResponse(error=pb_utils.TritonError(str(e))))
        return responses

    def execute(self, requests):
        per_request = [[pb_utils.get_input_tensor_by_name(r, n).as_numpy() for n in self.input_names]
                       for r in requests]
        if not self.batched or len(per_request) == 1:
            return self._one_by_one(per_request)
        # One call for the whole batch when the requests differ only in their batch sizes.
        for i in range(len(self.input_names)):
            if len({arrays[i].shape[1:] for arrays in per_request}) != 1:
                return self._one_by_one(per_request)
        sizes = [arrays[0].shape[0] for arrays in per_request]
        merged = [np.concatenate([arrays[i] for arrays in per_request]) for i in range(len(self.input_names))]
        try:
            outputs = self._call(merged)
        except kiln.Error:
            # Let each request find out on its own which of them is wrong.
            return self._one_by_one(per_request)
        responses, start = [], 0
        for size in sizes:
            responses.append(self._respond([o[start:start + size] for o in outputs]))
            start += size
        return responses

    def finalize(self):
        self.function = None
        self.context = None
        self.module = None
