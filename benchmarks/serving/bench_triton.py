"""Serving benchmark: Kiln vs ONNX Runtime, both behind Triton's Python backend, same run;
with --backend kiln, Kiln's native backend (libtriton_kiln.so) too.

    build/serving-venv/bin/python benchmarks/serving/bench_triton.py \\
        [--model mlp|resnet18] [--onnx FILE.onnx] [--clients 1,4,16] [--seconds 5] [--protocol grpc]
        [--backend python|kiln]

Run under the serving venv (scripts/setup_serving_venv.sh) with the kiln package importable
(PYTHONPATH=build/python). The model is one of benchmarks/onnx/export_models.py's, exported
with Debian's python3-torch when --onnx is not given: the MLP (784-128-10, symbolic batch;
requests of 1 row) or ResNet-18 (a static [1, 3, 224, 224]: no batch dimension, so only
dynamic batching off). Kiln
compiles that same .onnx (kiln.compile) and is exported with ``python -m kiln.triton
export``; ONNX Runtime runs the .onnx in benchmarks/serving/ort_model.py, a Python-backend
model of the same shape as Kiln's (one session per instance, a batch of requests in one
run). Both have 1 instance and 1 compute thread; the MLP has max_batch_size 64 and is served
twice: with dynamic batching (max_queue_delay_microseconds 100) and without. --backend kiln
adds a third configuration, "native": the same .vmfb exported with --backend kiln (same
instances, threads and batching), so that the three are loaded in turn in the same run.

One tritonserver serves all the models. For each client count, each configuration is
loaded in turn (interleaved, so that both backends see the same machine): that many client
processes (one client each) send batch-1 requests back to back for --warmup + --seconds
seconds; the warm-up's requests are not counted; --rounds times, alternating which backend
goes first. Printed: the median round's throughput (requests/s) and p50 / p99 latency as the
clients see it, and the median of the rounds' Kiln / ONNX Runtime throughput ratios; --json
writes every round.
"""
import argparse
import json
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


# name: (per-request input shape, output dims in the config, batched along dim 0)
MODELS = {
    "mlp": ([1, 784], [10], True),
    "resnet18": ([1, 3, 224, 224], [1, 1000], False),
}


def dims_text(dims):
    return "[ " + ", ".join(str(d) for d in dims) + " ]"


def ort_config(name, model, dynamic_batching):
    shape, out_dims, batched = MODELS[model]
    in_dims = shape[1:] if batched else shape
    text = f'''name: "{name}"
backend: "python"
max_batch_size: {64 if batched else 0}
input [ {{ name: "x" data_type: TYPE_FP32 dims: {dims_text(in_dims)} }} ]
output [ {{ name: "y" data_type: TYPE_FP32 dims: {dims_text(out_dims)} }} ]
instance_group [ {{ count: 1 kind: KIND_CPU }} ]
parameters [ {{ key: "ort_threads" value: {{ string_value: "1" }} }} ]
'''
    if dynamic_batching:
        text += "dynamic_batching {\n  max_queue_delay_microseconds: 100\n}\n"
    return text


# "kiln": the .vmfb on Triton's Python backend (model.py); "native": on libtriton_kiln.so;
# "ort": the .onnx in ort_model.py on the Python backend.
BACKENDS = ("kiln", "ort")


def variants(model, backends=BACKENDS):
    """(dynamic batching, Triton model name) of each backend's configurations."""
    batched = MODELS[model][2]
    return [(b, {backend: f"{backend}_{model}" + ("_db" if b else "") for backend in backends})
            for b in ((True, False) if batched else (False,))]


def build_repository(onnx_path, model, repository, backends=BACKENDS):
    import shutil

    import kiln
    import kiln.triton

    os.makedirs(repository, exist_ok=True)
    vmfb = os.path.join(os.path.dirname(os.path.abspath(repository)), f"{model}.vmfb")
    kiln.compile(onnx_path).save(vmfb)
    batched = MODELS[model][2]
    for batching, names in variants(model, backends):
        kiln.triton.export(vmfb, names["kiln"], repository, max_batch_size=64 if batched else 0,
                           dynamic_batching=batching, threads=1)
        if "native" in names:
            kiln.triton.export(vmfb, names["native"], repository, max_batch_size=64 if batched else 0,
                               dynamic_batching=batching, threads=1, backend="kiln")
        name = names["ort"]
        version = os.path.join(repository, name, "1")
        os.makedirs(version, exist_ok=True)
        shutil.copyfile(onnx_path, os.path.join(version, "model.onnx"))
        shutil.copyfile(os.path.join(HERE, "ort_model.py"), os.path.join(version, "model.py"))
        with open(os.path.join(repository, name, "config.pbtxt"), "w") as f:
            f.write(ort_config(name, model, batching))


def client_module(protocol):
    if protocol == "http":
        import tritonclient.http as module
    else:
        import tritonclient.grpc as module
    return module


def worker(protocol, url, model, shape, output, ready, go, start_at, warmup_s, seconds, queue):
    module = client_module(protocol)
    client = module.InferenceServerClient(url)
    x = np.random.default_rng(os.getpid()).uniform(-1, 1, shape).astype(np.float32)
    tensor = module.InferInput("x", list(shape), "FP32")
    tensor.set_data_from_numpy(x)
    outputs = [module.InferRequestedOutput(output)]
    ready.put(os.getpid())
    go.wait()
    measure_from = start_at.value + warmup_s
    stop_at = measure_from + seconds
    latencies = []
    while True:
        t0 = time.time()
        if t0 >= stop_at:
            break
        client.infer(model, [tensor], outputs=outputs)
        t1 = time.time()
        if t0 >= measure_from:
            latencies.append(t1 - t0)
    queue.put(latencies)


def run_load(protocol, url, model, shape, output, clients, warmup_s, seconds):
    context = multiprocessing.get_context("spawn")
    queue, ready, go = context.Queue(), context.Queue(), context.Event()
    start_at = context.Value("d", 0.0)
    processes = [context.Process(target=worker, args=(protocol, url, model, shape, output, ready, go, start_at,
                                                      warmup_s, seconds, queue))
                 for _ in range(clients)]
    for p in processes:
        p.start()
    # Every client imported and connected before any of them starts: all load at once.
    for _ in processes:
        ready.get(timeout=300)
    start_at.value = time.time()
    go.set()
    latencies = []
    for _ in processes:
        latencies.extend(queue.get(timeout=warmup_s + seconds + 120))
    for p in processes:
        p.join()
    lat = np.array(latencies) * 1e3
    return {"requests_per_s": len(lat) / seconds, "p50_ms": float(np.percentile(lat, 50)),
            "p99_ms": float(np.percentile(lat, 99)), "requests": int(len(lat))}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", choices=sorted(MODELS), default="mlp")
    parser.add_argument("--onnx", help="the model's .onnx (default: exported into the work folder)")
    parser.add_argument("--clients", default="1,4,16")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=3, help="rounds per configuration; medians are reported")
    parser.add_argument("--protocol", choices=("http", "grpc"), default="grpc")
    parser.add_argument("--work", help="scratch folder (default: a temporary one)")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--backend", choices=("python", "kiln"), default="python",
                        help="kiln: also serve Kiln on its native backend (\"native\"), beside the Python backend")
    args = parser.parse_args()
    backends = BACKENDS + (("native",) if args.backend == "kiln" else ())

    import kiln.triton
    import tritonclient.http as httpclient

    work = args.work or tempfile.mkdtemp(prefix="bench_triton.")
    os.makedirs(work, exist_ok=True)
    onnx_path = args.onnx
    if onnx_path is None:
        onnx_dir = os.path.join(work, "onnx")
        subprocess.run(["/usr/bin/python3", os.path.join(SOURCE, "benchmarks", "onnx", "export_models.py"),
                        "--out", onnx_dir, "--models", args.model], check=True, stdout=subprocess.DEVNULL)
        onnx_path = os.path.join(onnx_dir, f"{args.model}.onnx")
    repository = os.path.join(work, "repository")
    build_repository(onnx_path, args.model, repository, backends)
    shape = MODELS[args.model][0]

    http_port, grpc_port, metrics_port = free_ports(3)
    log = open(os.path.join(work, "tritonserver.log"), "w")
    server = subprocess.Popen(
        [sys.executable, "-m", "kiln.triton", "serve", "--repository", repository, "--http-port", str(http_port),
         "--grpc-port", str(grpc_port), "--metrics-port", str(metrics_port)],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    models = [name for _, names in variants(args.model, backends) for name in names.values()]
    try:
        http = httpclient.InferenceServerClient(f"127.0.0.1:{http_port}")
        deadline = time.monotonic() + 120
        while True:
            if server.poll() is not None:
                sys.exit(f"tritonserver exited with {server.returncode}; see {log.name}")
            try:
                if http.is_server_ready() and all(http.is_model_ready(m) for m in models):
                    break
            except Exception:
                pass
            if time.monotonic() > deadline:
                sys.exit(f"tritonserver not ready after 120 s; see {log.name}")
            time.sleep(0.5)
        # Same answers from both backends before timing them.
        x = np.random.default_rng(0).uniform(-1, 1, shape).astype(np.float32)
        answers = {}
        for m in models:
            output = http.get_model_metadata(m)["outputs"][0]["name"]
            t = httpclient.InferInput("x", list(shape), "FP32")
            t.set_data_from_numpy(x)
            answers[m] = http.infer(m, [t]).as_numpy(output)
        names = variants(args.model, backends)[0][1]
        for backend in backends[:1] + backends[2:]:
            diff = float(np.max(np.abs(answers[names[backend]] - answers[names["ort"]])))
            print(f"{args.model}: max |{backend} - ONNX Runtime| over one request: {diff:.2e}")
            if diff > 1e-4:
                sys.exit(f"{backend} and ONNX Runtime disagree; not timing them")
        output_of = {m: http.get_model_metadata(m)["outputs"][0]["name"] for m in models}
        url = f"127.0.0.1:{grpc_port if args.protocol == 'grpc' else http_port}"
        results = []
        for clients in [int(c) for c in args.clients.split(",")]:
            for batching, names in variants(args.model, backends):
                row = {"clients": clients, "dynamic_batching": batching}
                rounds = {backend: [] for backend in backends}
                for r in range(args.rounds):
                    # Rotating which backend goes first, against drifts in the machine's load.
                    shift = r % len(backends)
                    for backend in backends[shift:] + backends[:shift]:
                        model = names[backend]
                        rounds[backend].append(run_load(args.protocol, url, model, shape, output_of[model],
                                                        clients, args.warmup, args.seconds))
                for backend, runs in rounds.items():
                    # The median round of each measure.
                    row[backend] = {k: float(np.median([run[k] for run in runs])) for k in runs[0]}
                    row[backend]["rounds"] = runs
                ratios = [k["requests_per_s"] / o["requests_per_s"] for k, o in zip(rounds["kiln"], rounds["ort"])]
                row["throughput_ratio"] = float(np.median(ratios))
                line = (f"clients {clients:2d} batching {'on ' if batching else 'off'}: "
                        f"Kiln {row['kiln']['requests_per_s']:8.1f} req/s p50 {row['kiln']['p50_ms']:.2f} "
                        f"p99 {row['kiln']['p99_ms']:.2f} ms | ORT {row['ort']['requests_per_s']:8.1f} req/s "
                        f"p50 {row['ort']['p50_ms']:.2f} p99 {row['ort']['p99_ms']:.2f} ms | "
                        f"ratio {row['throughput_ratio']:.2f}")
                if "native" in rounds:
                    row["native_ort_ratio"] = float(np.median(
                        [n["requests_per_s"] / o["requests_per_s"] for n, o in zip(rounds["native"], rounds["ort"])]))
                    row["native_kiln_ratio"] = float(np.median(
                        [n["requests_per_s"] / k["requests_per_s"] for n, k in zip(rounds["native"], rounds["kiln"])]))
                    line += (f" | native {row['native']['requests_per_s']:8.1f} req/s p50 {row['native']['p50_ms']:.2f}"
                             f" p99 {row['native']['p99_ms']:.2f} ms | native/ORT {row['native_ort_ratio']:.2f}"
                             f" native/Kiln-python {row['native_kiln_ratio']:.2f}")
                results.append(row)
                print(line, flush=True)
        with urllib_open(f"http://127.0.0.1:{metrics_port}/metrics") as text:
            counts = {line.split("{")[1].split(",")[0]: line.split()[-1] for line in text.splitlines()
                      if line.startswith("nv_inference_exec_count{")}
            print("executions per model (nv_inference_exec_count):", counts)
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=40)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
        log.close()

    print("\n| clients | dynamic batching | Kiln req/s | Kiln p50 / p99 ms | ORT req/s | ORT p50 / p99 ms | Kiln / ORT |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        k, o = r["kiln"], r["ort"]
        print(f"| {r['clients']} | {'on' if r['dynamic_batching'] else 'off'} | {k['requests_per_s']:.0f} | "
              f"{k['p50_ms']:.2f} / {k['p99_ms']:.2f} | {o['requests_per_s']:.0f} | {o['p50_ms']:.2f} / "
              f"{o['p99_ms']:.2f} | {r['throughput_ratio']:.2f} |")
    if "native" in backends:
        print("\n| clients | dynamic batching | native req/s | native p50 / p99 ms | native / ORT | native / Kiln (python) |")
        print("|---|---|---|---|---|---|")
        for r in results:
            n = r["native"]
            print(f"| {r['clients']} | {'on' if r['dynamic_batching'] else 'off'} | {n['requests_per_s']:.0f} | "
                  f"{n['p50_ms']:.2f} / {n['p99_ms']:.2f} | {r['native_ort_ratio']:.2f} | {r['native_kiln_ratio']:.2f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"model": args.model, "protocol": args.protocol, "seconds": args.seconds, "cpus": os.cpu_count(),
                       "backends": list(backends), "load_average": os.getloadavg(), "results": results}, f, indent=1)


class urllib_open:
    def __init__(self, url):
        self.url = url

    def __enter__(self):
        import urllib.request

        with urllib.request.urlopen(self.url, timeout=10) as r:
            return r.read().decode()

    def __exit__(self, *exc):
        return False


if __name__ == "__main__":
    main()
