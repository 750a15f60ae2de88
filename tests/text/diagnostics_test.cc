// Every diagnostic of the text parser, made to fire: each case checks the
// file:line:col (the position of a marker substring in the source) and the
// message. Lexer diagnostics are tested in compiler/text/lexer_test.cc.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/text/text.h"

namespace kiln {
namespace {

enum class Kind { kRaw, kRelax, kTir };

struct Case {
  Kind kind;
  const char* body;     // whole file (kRaw) or function body lines (8-space indent added)
  const char* marker;   // the error is at the first occurrence of this text in `body`; a leading '>' means the last
  const char* message;  // after "error: "
};

const char* kRelaxHead = R"(@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((2, 3), "float32"), B: T.Buffer((2, 3), "float32")):
        for i, j in T.grid(2, 3):
            B[i, j] = A[i, j]

    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32"), t: R.Tuple(R.Object, R.Object)):
)";

const char* kTirHead = R"(@I.ir_module
class Module:
    @T.prim_func
    def g(A: T.Buffer((8, 8), "float32"), h: T.handle, s: T.int32):
)";

std::string Indented(const std::string& body) {
  std::string out, line;
  for (char c : body) {
    line += c;
    if (c == '\n') {
      out += (line == "\n" ? "" : "        ") + line;
      line.clear();
    }
  }
  if (!line.empty()) out += "        " + line + "\n";
  return out;
}

void Check(const Case& c) {
  std::string head = c.kind == Kind::kRelax ? kRelaxHead : c.kind == Kind::kTir ? kTirHead : "";
  std::string body = c.kind == Kind::kRaw ? c.body : Indented(c.body);
  std::string src = head + body;
  bool last = c.marker[0] == '>';
  std::string marker = last ? c.marker + 1 : c.marker;
  size_t at = last ? src.rfind(marker) : src.find(marker, head.size());
  if (last && at < head.size()) at = std::string::npos;
  ASSERT_NE(at, std::string::npos) << "marker '" << marker << "' not in:\n" << src;
  int line = 1, col = 1;
  for (size_t i = 0; i < at; ++i) {
    if (src[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  Result<ir::IRModule> r = text::ParseModule(src, "t.relax");
  ASSERT_FALSE(r.ok()) << "parsed without error:\n" << src;
  std::string want = "t.relax:" + std::to_string(line) + ":" + std::to_string(col) + ": error: " + c.message;
  const std::string& got = r.status().message();
  EXPECT_EQ(got.substr(0, got.find('\n')), want) << "source:\n" << src;
  // The message quotes the source line with a caret under the column.
  size_t ls = at == 0 ? std::string::npos : src.rfind('\n', at - 1);
  ls = ls == std::string::npos ? 0 : ls + 1;
  std::string quoted = "\n    " + src.substr(ls, src.find('\n', at) - ls);
  EXPECT_NE(got.find(quoted + "\n    " + std::string(col - 1, ' ') + "^"), std::string::npos) << got;
}

const Case kPythonCases[] = {
    {Kind::kRaw, "x = \n", "\n", "expected an expression, got end of line"},
    {Kind::kRaw, "@I.ir_module\nclass Module:\n    x = f(a=1, 2)\n", "2)", "positional argument follows keyword argument"},
    {Kind::kRaw, "@I.ir_module\nclass Module:\n    x = a < b < c\n", "< c", "chained comparisons are not supported; use 'and'"},
    {Kind::kRaw, "@I.ir_module x\nclass Module:\n    pass\n", "x\n", "expected end of line after the decorator, got 'x'"},
    {Kind::kRaw, "@I.ir_module\nx = 1\n", "x = 1", "expected 'def' or 'class' after decorators, got 'x'"},
    {Kind::kRaw, "@I.ir_module\nclass Module:\npass\n", "pass", "expected an indented block, got 'pass'"},
    {Kind::kRaw, "x = 1\n    y = 2\n", "y", "unexpected indentation"},
    {Kind::kRaw, "x = 1 2\n", "2", "expected end of line, got number 2"},
    {Kind::kRaw, "f(1, 2 3)\n", "3)", "expected ')' to close '(' opened at 1:2, got number 3"},
    {Kind::kRaw, "x = [1 2]\n", "2]", "expected ']' to close '[' opened at 1:5, got number 2"},
    {Kind::kRaw, "for i j in x:\n    pass\n", "j", "expected 'in', got 'j'"},
    {Kind::kRaw, "def (x):\n    pass\n", "(x)", "expected a function name, got '('"},
    {Kind::kRaw, "x = a.1\n", ".1", "expected end of line, got number .1"},
    {Kind::kRaw, "from tvm.script imp R\n", "imp", "expected 'import', got 'imp'"},
    {Kind::kRaw, "import tvm as\n", "\n", "expected a name after 'as', got end of line"},
    {Kind::kRaw, "from tvm import 1\n", "1", "expected a name to import, got number 1"},
};

const Case kModuleCases[] = {
    {Kind::kRaw, "x = 1\n", "x", "expected '@I.ir_module' and 'class Module:' at the top level"},
    {Kind::kRaw, "class M:\n    pass\n", "class", "class 'M' needs the decorator @I.ir_module"},
    {Kind::kRaw, "@I.ir_module\nclass A:\n    pass\n@I.ir_module\nclass B:\n    pass\n", "class B",
     "one file holds one module; found a second class 'B'"},
    {Kind::kRaw, "# nothing\n", "# nothing",
     "expected a module: '@I.ir_module' and 'class Module:', or an @R.function or @T.prim_func"},
    {Kind::kRaw, "@I.ir_module\nclass M:\n    pass\n@R.function\ndef f(x: R.Object):\n    return x\n", "def f",
     "function 'f' is outside the module class 'M'; indent it into the class"},
    {Kind::kRaw, "@R.function\ndef f(x: R.Object):\n    return x\n@I.ir_module\nclass M:\n    pass\n", "class M",
     "class 'M' follows function 'f' at the top level; put the function into the class"},
    {Kind::kRaw, "@R.function\ndef f(x: R.Object):\n    return x\n@R.function\ndef f(y: R.Object):\n    return y\n",
     "def f(y", "duplicate function 'f'"},
    {Kind::kRaw, "@I.ir_module\nclass M:\n    x = 1\n", "x = 1", "expected a function ('def') in the module class"},
    {Kind::kRaw, "@I.ir_module\nclass M:\n    @R.function\n    def f(x: R.Object):\n        return x\n    @R.function\n    def f(y: R.Object):\n        return y\n",
     "def f(y", "duplicate function 'f'"},
    {Kind::kRaw, "@I.ir_module\nclass M:\n    def f(x):\n        return x\n", "def", "function 'f' needs exactly one decorator: @R.function or @T.prim_func"},
    {Kind::kRaw, "@I.ir_module\nclass M:\n    @R.fn\n    def f(x):\n        return x\n", "R.fn", "unknown decorator @R.fn (expected @R.function or @T.prim_func)"},
    {Kind::kRaw, "@I.ir_module\nclass M:\n    @R.function(1)\n    def f(x):\n        return x\n", "1)", "@R.function takes keyword arguments only"},
    {Kind::kRaw, "@I.ir_module\nclass M:\n    @T.prim_func(fast=True)\n    def f():\n        pass\n", "fast", "unsupported argument 'fast' of @T.prim_func"},
};

const Case kRelaxCases[] = {
    {Kind::kRelax, "lv = R.matmull(x, x)\nreturn lv\n", "R.matmull", "unknown operator R.matmull"},
    {Kind::kRelax, "lv = R.add(x, lv9)\nreturn lv\n", "lv9", "undefined variable 'lv9'"},
    {Kind::kRelax, "lv: R.Tensor((2, 3), 3) = R.add(x, x)\nreturn lv\n", "3) =", "R.Tensor dtype must be a string, got 3"},
    {Kind::kRelax, "lv: R.Tensor((2, 3), \"flot32\") = R.add(x, x)\nreturn lv\n", "\"flot32\"",
     "unknown dtype \"flot32\" for R.Tensor (expected e.g. \"float32\")"},
    {Kind::kRelax, "lv: R.Tensor(2, \"float32\") = R.add(x, x)\nreturn lv\n", "2,",
     "R.Tensor shape must be a tuple or list of dimensions, as in (n, 784)"},
    {Kind::kRelax, "lv: R.Tensor((2, 3), \"float32\", ndim=3) = R.add(x, x)\nreturn lv\n", "3) =",
     "R.Tensor ndim=3 disagrees with its shape of 2 dimensions"},
    {Kind::kRelax, "lv: R.Tensor(ndim=\"2\") = R.add(x, x)\nreturn lv\n", "\"2\"", "R.Tensor ndim must be an integer"},
    {Kind::kRelax, "lv: R.Tensor((2, 3), \"float32\", 1) = R.add(x, x)\nreturn lv\n", "1) =",
     "R.Tensor takes at most 2 positional arguments"},
    {Kind::kRelax, "lv: R.Tensor((2, 3), layout=\"NC\") = R.add(x, x)\nreturn lv\n", "layout",
     "unknown keyword argument 'layout' of R.Tensor"},
    {Kind::kRelax, "lv: R.Tensor((\"n +\", 3)) = R.add(x, x)\nreturn lv\n", "\"n +\"", "cannot parse dimension \"n +\""},
    {Kind::kRelax, "lv: R.Tensor((k, 3)) = R.add(x, x)\nreturn lv\n", "k,", "undefined variable 'k'"},
    {Kind::kRelax, "lv: R.Prim = R.add(x, x)\nreturn lv\n", "R.Prim", "R.Prim needs a dtype, as in R.Prim(\"int64\")"},
    {Kind::kRelax, "lv: R.Prim() = R.add(x, x)\nreturn lv\n", "R.Prim", "R.Prim needs a dtype, as in R.Prim(\"int64\")"},
    {Kind::kRelax, "lv: R.Callable = R.add(x, x)\nreturn lv\n", "R.Callable", "R.Callable annotations are not supported yet"},
    {Kind::kRelax, "lv: R.Tensr = R.add(x, x)\nreturn lv\n", "R.Tensr",
     "expected a struct info annotation such as R.Tensor((1, 784), dtype=\"float32\"), got R.Tensr"},
    {Kind::kRelax, "lv: R.Shape(ndim=2.5) = R.add(x, x)\nreturn lv\n", "2.5", "R.Shape ndim must be an integer"},
    {Kind::kRaw, "@I.ir_module\nclass M:\n    @R.function\n    def main(x: R.Object):\n        lv = x\n", "def main",
     "Relax function 'main' has no return statement"},
    {Kind::kRelax, "return x\nlv = x\n", "lv", "statement after 'return'"},
    {Kind::kRelax, "return\n", "return", "a Relax function must return a value"},
    {Kind::kRelax, "with R.dataflow(1):\n    pass\nreturn x\n", "R.dataflow", "expected 'with R.dataflow():' in a Relax function"},
    {Kind::kRelax, "R.output(x)\nreturn x\n", "R.output", "R.output must be the last statement of a 'with R.dataflow():' block"},
    {Kind::kRelax, "R.add(x, x)\nreturn x\n", "R.add", "a Relax expression statement has no effect; bind its value to a name"},
    {Kind::kRelax, "R.func_attr(1, 2)\nreturn x\n", "R.func_attr", "R.func_attr takes one dict"},
    {Kind::kRelax, "R.func_attr([1])\nreturn x\n", "[1]", "expected a dict of attributes {\"name\": value, ...}"},
    {Kind::kRelax, "R.func_attr({1: 2})\nreturn x\n", "1:", "attribute names must be strings"},
    {Kind::kRelax, "R.func_attr({\"a\": x})\nreturn x\n", "x})", "unsupported attribute value (expected None, a bool, number, string, list of ints or dict of ints)"},
    {Kind::kRelax, "R.func_attr({\"tir_var_upper_bound\": {1: 2}})\nreturn x\n", "1: 2", "dict attribute keys must be strings"},
    {Kind::kRelax, "R.func_attr({\"tir_var_upper_bound\": {\"n\": \"big\"}})\nreturn x\n", "\"big\"", "dict attribute values must be integers"},
    {Kind::kRelax, "R.func_attr({\"a\": [1, \"b\"]})\nreturn x\n", "\"b\"", "attribute lists may only hold integers"},
    {Kind::kRelax, "R.func_attr({\"a\": float(\"big\")})\nreturn x\n", "\"big\"", "expected \"inf\", \"-inf\" or \"nan\""},
    {Kind::kRelax, "n = T.int64()\nn = T.int32()\nreturn x\n", "n = T.int32", "symbolic variable 'n' was already declared with another dtype"},
    {Kind::kRelax, "m, n = T.int64(), T.int64(), T.int64()\nreturn x\n", "m, n", "the number of names and of T.int64() declarations differ"},
    {Kind::kRelax, "m, n = T.int64(), 3\nreturn x\n", "3", "expected T.int64() or T.int32()"},
    {Kind::kRelax, "m, n.a = T.int64(), T.int64()\nreturn x\n", "n.a", "expected a variable name"},
    {Kind::kRelax, "m, n = T.int64(), T.int32()\nn = T.int64()\nreturn x\n", ">n = T.int64", "symbolic variable 'n' was already declared with another dtype"},
    {Kind::kRelax, "if x:\n    y = x\nreturn y\n", "if",
     "an if in a Relax function needs an else branch; both branches assign the result variable"},
    {Kind::kRelax, "if x:\n    pass\nelse:\n    y = x\nreturn y\n", "pass",
     "the last statement of an if/else branch must assign the result, as in 'y = R.add(a, b)'"},
    {Kind::kRelax, "if x:\n    y = x\nelse:\n    n = T.int64()\nreturn y\n", "n = T",
     "the last statement of an if/else branch must assign the result, as in 'y = R.add(a, b)'"},
    {Kind::kRelax, "if x:\n    y = x\nelse:\n    z = x\nreturn y\n", "z =",
     "both branches of if must end by assigning the same variable: expected 'y', got 'z'"},
    {Kind::kRelax, "if x:\n    y = x\nelif x:\n    z = x\nelse:\n    z = x\nreturn y\n", "z =",
     "both branches of if must end by assigning the same variable: expected 'y', got 'z'"},
    {Kind::kRelax, "if x:\n    y = R.match_cast(x, R.Object)\nelse:\n    y = x\nreturn y\n", "R.match_cast",
     "an if/else branch cannot end with R.match_cast; bind it first, then assign the result"},
    {Kind::kRelax, "if x:\n    return x\n    y = x\nelse:\n    y = x\nreturn y\n", "return x",
     "'return' inside if/else is not supported; assign the result in both branches and return it after the if"},
    {Kind::kRelax, "if x:\n    R.func_attr({})\n    y = x\nelse:\n    y = x\nreturn y\n", "R.func_attr",
     "R.func_attr belongs at the top of the function, not inside if/else"},
    {Kind::kRelax, "if x:\n    x = x\nelse:\n    x = x\nreturn x\n", "x = x", "variable 'x' is already defined"},
    {Kind::kRelax, "if x:\n    lv = x\n    y = lv\nelse:\n    y = x\nreturn lv\n", ">lv\n", "undefined variable 'lv'"},
    {Kind::kRelax, "if q:\n    y = x\nelse:\n    y = x\nreturn y\n", "q:", "undefined variable 'q'"},
    {Kind::kRelax, "with R.dataflow():\n    if x:\n        y = x\n    else:\n        y = x\n    R.output(y)\nreturn x\n", "if",
     "if/else is not allowed inside a dataflow block; put it after the block"},
    {Kind::kRelax, "for i in x:\n    pass\nreturn x\n", "for", "unexpected statement in a Relax function"},
    {Kind::kRelax, "import tvm\nreturn x\n", "import", "unexpected statement in a Relax function"},
    {Kind::kRelax, "with R.dataflow():\n    R.output(x)\n    lv = x\nreturn x\n", "R.output",
     "R.output must be the last statement of a 'with R.dataflow():' block"},
    {Kind::kRelax, "with R.dataflow():\n    lv = x\n    R.output(lv + 1)\nreturn x\n", "+ 1", "R.output takes variable names"},
    {Kind::kRelax, "with R.dataflow():\n    R.add(x, x)\n    R.output()\nreturn x\n", "R.add", "only bindings and R.output are allowed in a dataflow block"},
    {Kind::kRelax, "with R.dataflow():\n    lv = x\n    R.output(gv)\nreturn x\n", "gv", "R.output names 'gv', which is not bound in this dataflow block"},
    {Kind::kRelax, "with R.dataflow():\n    lv = R.add(x, x)\n    R.output()\nreturn lv\n", "lv\n", "undefined variable 'lv'"},
    {Kind::kRelax, "lv: R.Object\nreturn x\n", "lv", "expected '=' and a value"},
    {Kind::kRelax, "a, b = t\nreturn x\n", "a, b", "a Relax binding binds one name; unpack tuples with t[0], t[1]"},
    {Kind::kRelax, "x = R.add(x, x)\nreturn x\n", "x = R", "variable 'x' is already defined"},
    {Kind::kRelax, "lv = R.match_cast(x)\nreturn x\n", "R.match_cast",
     "R.match_cast takes a value and a struct info, as in R.match_cast(x, R.Tensor((n,), \"float32\")), and optionally "
     "messages=[\"...\", ...]"},
    {Kind::kRelax, "lv = R.match_cast(x, R.Object, why=[\"\"])\nreturn x\n", "R.match_cast",
     "R.match_cast takes a value and a struct info, as in R.match_cast(x, R.Tensor((n,), \"float32\")), and optionally "
     "messages=[\"...\", ...]"},
    {Kind::kRelax, "lv = R.match_cast(x, R.Tensor((2, 3), \"float32\"), messages=\"a\")\nreturn x\n", "\"a\"",
     "messages= takes a list of strings, one per dimension"},
    {Kind::kRelax, "lv = R.match_cast(x, R.Tensor((2, 3), \"float32\"), messages=[\"a\", 1])\nreturn x\n", "1]",
     "messages= takes a list of strings"},
    {Kind::kRelax, "lv = R.match_cast(x, R.Tensor((2, 3), \"float32\"), messages=[\"a\"])\nreturn x\n", "[\"a\"]",
     "messages= has 1 strings; the matched shape has 2 dimensions"},
    {Kind::kRelax, "lv = R.match_cast(x, R.Object, messages=[])\nreturn x\n", "[]",
     "messages= has 0 strings; the matched shape has no dimensions to check"},
    {Kind::kRelax, "lv = R.add(R.match_cast(x, R.Object), x)\nreturn x\n", "R.match_cast",
     "R.match_cast must be the whole value of a binding: lv = R.match_cast(x, ...)"},
    {Kind::kRelax, "lv = cls.g(x)\nreturn x\n", "cls.g", "module has no function 'g'"},
    {Kind::kRelax, "lv = R.nn\nreturn x\n", "R.nn", "unexpected R.nn in a Relax expression"},
    {Kind::kRelax, "lv = [x]\nreturn x\n", "[x]", "expected a Relax expression"},
    {Kind::kRelax, "lv = t[x]\nreturn x\n", "t[x]", "a tuple is indexed by one non-negative integer, as in t[0]"},
    {Kind::kRelax, "lv = metadata[\"relax.expr.Constant\"][0]\nreturn x\n", "metadata",
     "metadata[...] refers to a constant table, but none was given: parse with the table that PrintModule returned, or bind weights with --params"},
    {Kind::kRelax, "lv = metadata[\"tir.Buffer\"][0]\nreturn x\n", "\"tir.Buffer\"",
     "unknown metadata section \"tir.Buffer\" (Kiln's constant table holds \"relax.expr.Constant\")"},
    {Kind::kRelax, "lv = metadata[0][0]\nreturn x\n", "metadata",
     "expected metadata[\"relax.expr.Constant\"][index]"},
    {Kind::kRelax, "lv = metadata[\"relax.expr.Constant\"][x]\nreturn x\n", "metadata",
     "a metadata constant is indexed by one non-negative integer, as in metadata[\"relax.expr.Constant\"][0]"},
    {Kind::kRelax, "lv = R.shape(4)\nreturn x\n", "4)", "R.shape shape must be a tuple or list of dimensions, as in (n, 784)"},
    {Kind::kRelax, "lv = R.shape()\nreturn x\n", "R.shape", "R.shape takes a list of dimensions, as in R.shape([n, 4])"},
    {Kind::kRelax, "lv = R.prim_value()\nreturn x\n", "R.prim_value", "R.prim_value takes one value"},
    {Kind::kRelax, "lv = R.str(1)\nreturn x\n", "R.str", "R.str takes one string"},
    {Kind::kRelax, "lv = R.dtype()\nreturn x\n", "R.dtype", "R.dtype takes one dtype string"},
    {Kind::kRelax, "lv = R.ExternFunc(1)\nreturn x\n", "R.ExternFunc", "R.ExternFunc takes the packed function's name as a string"},
    {Kind::kRelax, "lv = R.output(x)\nreturn x\n", "R.output", "R.output must be the last statement of a dataflow block"},
    {Kind::kRelax, "lv = cls.f(x, k=1)\nreturn x\n", "k=1", "calls of module functions take no keyword arguments"},
    {Kind::kRelax, "lv = foo(x)\nreturn x\n", "foo", "undefined function 'foo'"},
    {Kind::kRelax, "lv = x.foo(x)\nreturn x\n", "x.foo", "unsupported call x.foo in a Relax function"},
    {Kind::kRelax, "lv = R.call_tir(cls.f, (x,))\nreturn x\n", "R.call_tir", "R.call_tir needs out_sinfo=R.Tensor(...)"},
    {Kind::kRelax, "lv = R.call_tir(cls.f)\nreturn x\n", "R.call_tir", "R.call_tir takes a callee, a tuple of arguments and out_sinfo"},
    {Kind::kRelax, "lv = R.call_tir(x, (x,), R.Object)\nreturn x\n", "x, (x", "R.call_tir calls a T.prim_func of the module, as in cls.f"},
    {Kind::kRelax, "lv = R.call_tir(cls.f, (x,), R.Object, tir_vars=x)\nreturn x\n", "x)\n", "tir_vars must be R.shape([...])"},
    {Kind::kRelax, "lv = R.call_dps_packed(env.relu, (x,), R.Object)\nreturn x\n", "env.relu",
     "R.call_dps_packed needs the packed function's name as a string, as in \"env.linear\""},
    {Kind::kRelax, "lv = R.call_dps_packed(\"env.relu\", (x,), R.Object, 1)\nreturn x\n", "1)",
     "R.call_dps_packed takes at most 3 positional arguments"},
    {Kind::kRelax, "lv = R.call_packed(x)\nreturn x\n", "R.call_packed", "R.call_packed needs the packed function's name as a string first"},
    {Kind::kRelax, "lv = R.call_packed(\"f\", x)\nreturn x\n", "R.call_packed", "R.call_packed needs sinfo_args=... (the struct info of its result)"},
    {Kind::kRelax, "lv = R.const()\nreturn x\n", "R.const", "R.const needs a value"},
    {Kind::kRelax, "lv = R.const([[1, 2], [3]])\nreturn x\n", "[3]", "R.const lists must be rectangular: expected 2 elements, got 1"},
    {Kind::kRelax, "lv = R.const([[1, 2], 3])\nreturn x\n", "3]", "R.const lists must be rectangular: a number where a list was expected"},
    {Kind::kRelax, "lv = R.const([1, [2]])\nreturn x\n", "[2]", "R.const lists must be rectangular: a list where a number was expected"},
    {Kind::kRelax, "lv = R.const(x)\nreturn x\n", "x)", "R.const needs numbers or bools, as in R.const([1.0, 2.0], \"float32\")"},
    {Kind::kRelax, "lv = R.const([1, -x])\nreturn x\n", "x])", "R.const needs numbers or bools, as in R.const([1.0, 2.0], \"float32\")"},
    {Kind::kRelax, "lv = R.const(float(\"big\"))\nreturn x\n", "\"big\"", "expected \"inf\", \"-inf\" or \"nan\""},
    {Kind::kRelax, "lv = R.const(1, \"float32x4\")\nreturn x\n", "\"float32x4\"", "R.const does not support dtype float32x4"},
    {Kind::kRelax, "lv = R.const(1, \"float32\", 2)\nreturn x\n", "2)", "R.const takes at most 2 positional arguments"},
};

const Case kSignatureCases[] = {
    {Kind::kRaw, "@I.ir_module\nclass M:\n    @R.function\n    def main(x):\n        return x\n", "x)",
     "parameter 'x' needs a struct info annotation such as R.Tensor((1, 784), dtype=\"float32\")"},
    {Kind::kRaw, "@I.ir_module\nclass M:\n    @R.function\n    def main(x: R.Object, x: R.Object):\n        return x\n", "x: R.Object)",
     "duplicate parameter 'x'"},
    {Kind::kRaw, "@I.ir_module\nclass M:\n    @T.prim_func\n    def f(A):\n        pass\n", "A)",
     "parameter 'A' needs a type annotation (T.Buffer, T.handle or T.int64)"},
    {Kind::kRaw, "@I.ir_module\nclass M:\n    @T.prim_func\n    def f(A: int):\n        pass\n", "int",
     "unsupported parameter annotation for a T.prim_func (expected T.Buffer(...), T.handle or T.int64)"},
    {Kind::kRaw, "@I.ir_module\nclass M:\n    @T.prim_func\n    def f(n: T.int32, n: T.int32):\n        pass\n", "n: T.int32)",
     "parameter 'n' is already defined"},
    {Kind::kRaw, "@I.ir_module\nclass M:\n    @T.prim_func\n    def f() -> T.int32:\n        pass\n", "T.int32:",
     "a T.prim_func returns nothing; remove the '->' annotation"},
    {Kind::kRaw, "@I.ir_module\nclass M:\n    @T.prim_func\n    def f(A: T.Buffer()):\n        pass\n", "T.Buffer()", "T.Buffer needs a shape"},
    {Kind::kRaw, "@I.ir_module\nclass M:\n    @T.prim_func\n    def f(A: T.Buffer((1,), \"float32\", 1)):\n        pass\n", "1))",
     "T.Buffer takes a shape and a dtype"},
    {Kind::kRaw, "@I.ir_module\nclass M:\n    @T.prim_func\n    def f(A: T.Buffer((1,), order=1)):\n        pass\n", "order",
     "unknown keyword argument 'order' of T.Buffer"},
    {Kind::kRaw, "@I.ir_module\nclass M:\n    @T.prim_func\n    def f(A: T.Buffer((1,), scope=1)):\n        pass\n", "1)",
     "scope must be a string"},
};

const Case kTirCases[] = {
    {Kind::kTir, "T.func_attr(1, 2)\n", "T.func_attr", "T.func_attr takes one dict"},
    {Kind::kTir, "n = T.int64()\nn = T.int64()\nT.evaluate(0)\n", ">n = T.int64()", "variable 'n' is already defined"},
    {Kind::kTir, "A.x = T.int64()\nT.evaluate(0)\n", "A.x", "expected a variable name"},
    {Kind::kTir, "n, m = T.int64(), T.int64(), T.int64()\n", "n, m", "the number of names and of T.int64() declarations differ"},
    {Kind::kTir, "n, m = T.int64(), 3\n", "3", "expected T.int64() or T.int32()"},
    {Kind::kTir, "X = T.match_buffer(1, (8,))\nT.evaluate(0)\n", "T.match_buffer", "T.match_buffer needs a T.handle parameter as its first argument"},
    {Kind::kTir, "X = T.match_buffer(s, (8,))\nT.evaluate(0)\n", "s, (8", "'s' is not a T.handle parameter of this function"},
    {Kind::kTir, "X = T.match_buffer(h, (8,))\nY = T.match_buffer(h, (8,))\nT.evaluate(0)\n", ">h, (8,))", "parameter 'h' is already bound to a buffer"},
    {Kind::kTir, "X[0] = T.match_buffer(h, (8,))\n", "X[0]", "expected a buffer name"},
    {Kind::kTir, "with T.init():\n    pass\n", "with", "with T.init() must be directly inside a T.block"},
    {Kind::kTir, "with foo():\n    pass\n", "foo", "expected 'with T.block(\"name\"):' in a T.prim_func"},
    {Kind::kTir, "for i in range(8):\n    X = T.alloc_buffer((8,))\n", "X =", "T.alloc_buffer must be directly inside a T.block or at the top of the function"},
    {Kind::kTir, "for i in range(8):\n    n = T.int64()\n", "n =", "symbolic variables must be declared at the top of the function"},
    {Kind::kTir, "for i in range(8):\n    X = T.match_buffer(h, (8,))\n", "X =", "T.match_buffer must be at the top of the function"},
    {Kind::kTir, "x: T.foo = 1\n", "T.foo", "expected a TIR type such as T.int32 for a let variable"},
    {Kind::kTir, "x: T.int32\n", "x: T.int32", "expected '=' and a value"},
    {Kind::kTir, "A.data = 1\n", "A.data", "expected a name or a buffer element"},
    {Kind::kTir, "T.evaluate()\n", "T.evaluate", "T.evaluate takes one expression"},
    {Kind::kTir, "for i in range(8):\n    T.func_attr({})\n", "T.func_attr", "T.func_attr must be at the top of the function"},
    {Kind::kTir, "T.reads(A[0, 0])\n", "T.reads", "T.reads must be directly inside a T.block"},
    {Kind::kTir, "return 1\n", "return", "'return' is not supported in a T.prim_func"},
    {Kind::kTir, "def k():\n    pass\n", "def k", "unexpected statement in a T.prim_func"},
    {Kind::kTir, "s[0] = 1\n", "s[0]", "undefined buffer 's'"},
    {Kind::kTir, "A[0] = 1\n", "A[0]", "buffer 'A' has 2 dimensions, got 1 indices"},
    {Kind::kTir, "A[0:1, 0] = 1\n", "0:1", "slices cannot be stored to"},
    {Kind::kTir, "A().x[0] = 1\n", "A().x[0]", "only buffers can be stored to"},
    {Kind::kTir, "for i, 1 in T.grid(2, 2):\n    pass\n", "1 in", "expected a loop variable name"},
    {Kind::kTir, "for i, j in T.grid(2):\n    pass\n", "for", "T.grid has 1 extents but the loop names 2 variables"},
    {Kind::kTir, "for i, j in range(2):\n    pass\n", "i, j", "range loops bind one variable"},
    {Kind::kTir, "for i in T.serial(1, 2, 3):\n    pass\n", "T.serial", "T.serial takes (stop) or (start, stop)"},
    {Kind::kTir, "for i in T.thread_binding(8, thread=\"x\"):\n    pass\n", "T.thread_binding",
     "T.thread_binding needs thread= one of blockIdx.x/y/z, threadIdx.x/y/z; got 'x'"},
    {Kind::kTir, "for i in T.thread_binding(8, tag=\"x\"):\n    pass\n", "\"x\"",
     "T.thread_binding takes thread=\"<blockIdx|threadIdx>.<x|y|z>\""},
    {Kind::kTir, "for i in [1, 2]:\n    pass\n", "[1, 2]", "expected T.grid, T.serial, T.parallel, T.vectorized, T.unroll, T.thread_binding or range after 'in'"},
    {Kind::kTir, "with T.block(1):\n    pass\n", "T.block", "T.block takes the block's name as a string, as in T.block(\"Y\")"},
    {Kind::kTir, "for i in range(8):\n    with T.block(\"b\"):\n        vi = T.axis.remap(\"S\")\n", "T.axis.remap",
     "T.axis.remap takes a kinds string and a list of loop variables, as in T.axis.remap(\"SSR\", [i, j, k])"},
    {Kind::kTir, "for i in range(8):\n    with T.block(\"b\"):\n        vi = T.axis.remap(\"SS\", [i])\n", "T.axis.remap",
     "T.axis.remap: 2 kinds, 1 loop variables and 1 names must agree"},
    {Kind::kTir, "for i in range(8):\n    with T.block(\"b\"):\n        vi = T.axis.remap(\"X\", [i])\n", "\"X\"", "unknown iterator kind 'X' (expected S or R)"},
    {Kind::kTir, "for i in range(8):\n    with T.block(\"b\"):\n        vi = T.axis.remap(\"S\", [s])\n", "s])",
     "T.axis.remap binds to loop variables; 's' is not one"},
    {Kind::kTir, "for i in range(8):\n    with T.block(\"b\"):\n        A[0] = T.axis.remap(\"S\", [i])\n", "A[0]", "expected an iterator name"},
    {Kind::kTir, "for i in range(8):\n    with T.block(\"b\"):\n        vi = T.axis.spatial(8)\n", "T.axis.spatial",
     "T.axis.spatial/reduce take a domain and a binding, as in T.axis.spatial(128, i)"},
    {Kind::kTir, "for i in range(8):\n    with T.block(\"b\"):\n        T.where()\n", "T.where", "T.where takes one condition"},
    {Kind::kTir, "for i in range(8):\n    with T.block(\"b\"):\n        T.block_attr()\n", "T.block_attr", "T.block_attr takes one dict"},
    {Kind::kTir, "for i in range(8):\n    with T.block(\"b\"):\n        T.block_attr(1)\n", "1)", "T.block_attr takes a dict"},
    {Kind::kTir, "for i in range(8):\n    with T.block(\"b\"):\n        T.block_attr({\"a\": 1})\n", "\"a\"", "block attributes must map strings to strings"},
    {Kind::kTir, "for i in range(8):\n    with T.block(\"b\"):\n        with T.init():\n            pass\n        with T.init():\n            pass\n",
     ">with T.init()", "a block has at most one T.init()"},
    {Kind::kTir, "with T.block(\"b\"):\n    T.reads(s)\n", "s)", "expected a buffer region such as X[vi, 0:784]"},
    {Kind::kTir, "with T.block(\"b\"):\n    T.reads(Q[0])\n", "Q[0]", "undefined buffer 'Q'"},
    {Kind::kTir, "with T.block(\"b\"):\n    T.reads(A[0])\n", "A[0]", "buffer 'A' has 2 dimensions, got 1 indices"},
    {Kind::kTir, "with T.block(\"b\"):\n    T.reads(A[0, :8])\n", ":8", "a region slice needs both bounds, as in 0:784"},
};

const Case kTirExprCases[] = {
    {Kind::kTir, "T.evaluate(q)\n", "q)", "undefined variable 'q'"},
    {Kind::kTir, "T.evaluate(A)\n", "A)", "buffer 'A' used as a value; index it, as in A[i]"},
    {Kind::kTir, "T.evaluate(s[0])\n", "s[0]", "'s' is a variable, not a buffer"},
    {Kind::kTir, "T.evaluate(Q[0])\n", "Q[0]", "undefined buffer 'Q'"},
    {Kind::kTir, "T.evaluate(A[0])\n", "A[0]", "buffer 'A' has 2 dimensions, got 1 indices"},
    {Kind::kTir, "T.evaluate(A[0:1, 0])\n", "0:1", "slices are only allowed in T.reads/T.writes"},
    {Kind::kTir, "T.evaluate(A.x[0])\n", "A.x[0]", "only buffers can be indexed in TIR"},
    {Kind::kTir, "T.evaluate(T.float32)\n", "T.float32", "T.float32 is a type; write T.float32(value) for a literal"},
    {Kind::kTir, "T.evaluate(T.pi)\n", "T.pi", "unknown name T.pi"},
    {Kind::kTir, "T.evaluate([1])\n", "[1]", "expected a TIR expression"},
    {Kind::kTir, "T.evaluate(T.int64())\n", "T.int64()", "T.int64() declares a symbolic variable; write it as a statement: n = T.int64()"},
    {Kind::kTir, "T.evaluate(T.int32(1, 2))\n", "T.int32(1, 2)", "T.int32 takes 1 arguments, got 2"},
    {Kind::kTir, "T.evaluate(T.int32(1.5))\n", "1.5", "T.int32 needs an integer literal, got a float"},
    {Kind::kTir, "T.evaluate(T.float32(\"big\"))\n", "\"big\"", "expected \"inf\", \"-inf\" or \"nan\""},
    {Kind::kTir, "T.evaluate(T.Cast(3, s))\n", "3,", "T.Cast dtype must be a string, got 3"},
    {Kind::kTir, "T.evaluate(T.call_intrin(\"float32\"))\n", "T.call_intrin", "T.call_intrin takes a dtype, an operator name and arguments"},
    {Kind::kTir, "T.evaluate(T.call_intrin(\"float32\", s))\n", "s))", "expected the operator name as a string"},
    {Kind::kTir, "T.evaluate(T.exp(1, 2))\n", "T.exp(1, 2)", "T.exp takes 1 arguments, got 2"},
    {Kind::kTir, "T.evaluate(T.expp(s))\n", "T.expp", "unknown TIR function T.expp"},
    {Kind::kTir, "T.evaluate(T.min_value(\"float32x4\"))\n", "\"float32x4\"", "T.min_value does not support dtype float32x4"},
    {Kind::kTir, "T.evaluate(T.max_value())\n", "T.max_value()", "T.max_value takes 1 arguments, got 0"},
    {Kind::kTir, "T.evaluate(s @ s)\n", "@ s", "expected ')' to close '(' opened at 5:19, got '@'"},
};

TEST(DiagnosticsTest, PythonSyntax) {
  for (const Case& c : kPythonCases) Check(c);
}
TEST(DiagnosticsTest, Module) {
  for (const Case& c : kModuleCases) Check(c);
}
TEST(DiagnosticsTest, Relax) {
  for (const Case& c : kRelaxCases) Check(c);
}
TEST(DiagnosticsTest, Signatures) {
  for (const Case& c : kSignatureCases) Check(c);
}
TEST(DiagnosticsTest, Tir) {
  for (const Case& c : kTirCases) Check(c);
}
TEST(DiagnosticsTest, TirExpressions) {
  for (const Case& c : kTirExprCases) Check(c);
}

// Errors that need a constant table to fire.
TEST(DiagnosticsTest, MetadataTable) {
  std::string src = std::string(kRelaxHead) + "        lv = metadata[\"relax.expr.Constant\"][2]\n        return x\n";
  Tensor t = Tensor::Empty(std::vector<int64_t>{2}, DType::Float32()).value();
  std::vector<ir::Expr> table = {std::make_shared<ir::ConstantExpr>(t), std::make_shared<ir::StringImmExpr>("s")};
  Result<ir::IRModule> r = text::ParseModule(src, "t.relax", table);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message().substr(0, r.status().message().find('\n')),
            "t.relax:10:46: error: metadata constant 2 is out of range: the constant table has 2 entries");
  src = std::string(kRelaxHead) + "        lv = metadata[\"relax.expr.Constant\"][1]\n        return x\n";
  r = text::ParseModule(src, "t.relax", table);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().substr(0, r.status().message().find('\n')),
            "t.relax:10:46: error: entry 1 of the constant table is not a constant tensor");
}

TEST(DiagnosticsTest, MissingFile) {
  Result<ir::IRModule> r = text::ParseModuleFile("/nonexistent/m.relax");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(r.status().message(), "cannot read '/nonexistent/m.relax'");
}

}  // namespace
}  // namespace kiln
