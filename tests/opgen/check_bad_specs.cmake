# Runs tg_opgen on each bad spec below and checks that it fails naming the file, the op and the key
# (spec files are untrusted input: names, texts and formulas must never become live C++).
# Usage: cmake -DOPGEN=<tg_opgen> -DTEMPLATE=<tensor.h.in> -DWORK=<dir> -P check_bad_specs.cmake
set(cases
  "unknown_identifier|{\"name\":\"bad\",\"doc\":\"d\",\"args\":[{\"name\":\"self\",\"type\":\"Tensor\"}],\"kernels\":{\"CPU\":\"cpu::mul\"},\"backward\":{\"self\":\"grad * selff\"},\"samples\":[{\"self\":[2]}]}|ops/specs/unknown_identifier.json: op 'bad': key 'backward.self': unknown identifier 'selff'"
  "unknown_key|{\"name\":\"bad\",\"doc\":\"d\",\"colour\":1,\"args\":[],\"kernels\":{\"CPU\":\"cpu::mul\"},\"samples\":[{}]}|ops/specs/unknown_key.json: op 'bad': key 'colour': unknown key"
  "missing_kernel|{\"name\":\"bad\",\"doc\":\"d\",\"args\":[{\"name\":\"self\",\"type\":\"Tensor\"}],\"kernels\":{\"CPU\":\"cpu::no_such_kernel\"},\"backward\":{\"self\":\"grad\"},\"samples\":[{\"self\":[2]}]}|ops/specs/missing_kernel.json: op 'bad': key 'kernels.CPU': kernel 'cpu::no_such_kernel' is not defined"
  "missing_formula|{\"name\":\"bad\",\"doc\":\"d\",\"args\":[{\"name\":\"self\",\"type\":\"Tensor\"},{\"name\":\"other\",\"type\":\"Tensor\"}],\"kernels\":{\"CPU\":\"cpu::mul\"},\"backward\":{\"self\":\"grad\"},\"samples\":[{\"self\":[2],\"other\":[2]}]}|key 'backward': no formula for differentiable input 'other'"
  "two_formulas|{\"name\":\"bad\",\"doc\":\"d\",\"args\":[{\"name\":\"self\",\"type\":\"Tensor\"},{\"name\":\"other\",\"type\":\"Tensor\"}],\"kernels\":{\"CPU\":\"cpu::mul\"},\"backward\":{\"self, other\":\"f(grad, grad_input_mask)\",\"other\":\"grad\"},\"samples\":[{\"self\":[2],\"other\":[2]}]}|key 'backward.other': 'other' has two formulas"
  "joint_key_unknown_input|{\"name\":\"bad\",\"doc\":\"d\",\"args\":[{\"name\":\"self\",\"type\":\"Tensor\"},{\"name\":\"other\",\"type\":\"Tensor\"}],\"kernels\":{\"CPU\":\"cpu::mul\"},\"backward\":{\"self, othr\":\"f(grad, grad_input_mask)\"},\"samples\":[{\"self\":[2],\"other\":[2]}]}|key 'backward.self, othr': no argument named 'othr'"
  "bad_type|{\"name\":\"bad\",\"doc\":\"d\",\"args\":[{\"name\":\"self\",\"type\":\"Tensr\"}],\"kernels\":{\"CPU\":\"cpu::mul\"},\"samples\":[{}]}|key 'args.self.type': unknown type 'Tensr'"
  "missing_check|{\"name\":\"bad\",\"doc\":\"d\",\"args\":[{\"name\":\"self\",\"type\":\"Tensor\"}],\"kernels\":{\"CPU\":\"cpu::mul\"},\"check\":\"checks::no_such_check\",\"backward\":{\"self\":\"grad\"},\"samples\":[{\"self\":[2]}]}|ops/specs/missing_check.json: op 'bad': key 'check': check 'checks::no_such_check' is not defined under ops/checks"
  "unqualified_check|{\"name\":\"bad\",\"doc\":\"d\",\"args\":[{\"name\":\"self\",\"type\":\"Tensor\"}],\"kernels\":{\"CPU\":\"cpu::mul\"},\"check\":\"mul\",\"backward\":{\"self\":\"grad\"},\"samples\":[{\"self\":[2]}]}|ops/specs/unqualified_check.json: op 'bad': key 'check': expected \"checks::<function>\""
  "bad_json|{\"name\": |ops/specs/bad_json.json: invalid JSON"
  "name_number|{\"name\":5}|ops/specs/name_number.json: op '?': key 'name': must be a string, got number"
  "name_not_identifier|{\"name\":\"x(){} int y\",\"doc\":\"d\",\"args\":[{\"name\":\"self\",\"type\":\"Tensor\"}],\"kernels\":{\"CPU\":\"cpu::mul\"},\"backward\":{\"self\":\"grad\"},\"samples\":[{\"self\":[2]}]}|ops/specs/name_not_identifier.json: op '?': key 'name': 'x(){} int y' is not a C++ identifier"
  "name_keyword|{\"name\":\"delete\",\"doc\":\"d\",\"args\":[{\"name\":\"self\",\"type\":\"Tensor\"}],\"kernels\":{\"CPU\":\"cpu::mul\"},\"backward\":{\"self\":\"grad\"},\"samples\":[{\"self\":[2]}]}|op '?': key 'name': 'delete' is a C++ keyword"
  "arg_name|{\"name\":\"bad\",\"doc\":\"d\",\"args\":[{\"name\":\"self, int x\",\"type\":\"Tensor\"}],\"kernels\":{\"CPU\":\"cpu::mul\"},\"backward\":{},\"samples\":[{\"self\":[2]}]}|op 'bad': key 'args.name': 'self, int x' is not a C++ identifier"
  "doc_newline|{\"name\":\"bad\",\"doc\":\"d\\n#include <cstdlib>\",\"args\":[{\"name\":\"self\",\"type\":\"Tensor\"}],\"kernels\":{\"CPU\":\"cpu::mul\"},\"backward\":{\"self\":\"grad\"},\"samples\":[{\"self\":[2]}]}|op 'bad': key 'doc': must be one line of printable text"
  "doc_backslash|{\"name\":\"bad\",\"doc\":\"d \\\\\",\"args\":[{\"name\":\"self\",\"type\":\"Tensor\"}],\"kernels\":{\"CPU\":\"cpu::mul\"},\"backward\":{\"self\":\"grad\"},\"samples\":[{\"self\":[2]}]}|op 'bad': key 'doc': must not end with a backslash"
  "formula_injection|{\"name\":\"bad\",\"doc\":\"d\",\"args\":[{\"name\":\"self\",\"type\":\"Tensor\"}],\"kernels\":{\"CPU\":\"cpu::mul\"},\"backward\":{\"self\":\"grad) , system(\\\"x\\\"\"},\"samples\":[{\"self\":[2]}]}|op 'bad': key 'backward.self': formula \"grad) , system(\"x\"\" unexpected ')'"
  "formula_unbalanced|{\"name\":\"bad\",\"doc\":\"d\",\"args\":[{\"name\":\"self\",\"type\":\"Tensor\"}],\"kernels\":{\"CPU\":\"cpu::mul\"},\"backward\":{\"self\":\"((-grad\"},\"samples\":[{\"self\":[2]}]}|op 'bad': key 'backward.self': formula \"((-grad\" expected ')'"
  "formula_empty|{\"name\":\"bad\",\"doc\":\"d\",\"args\":[{\"name\":\"self\",\"type\":\"Tensor\"}],\"kernels\":{\"CPU\":\"cpu::mul\"},\"backward\":{\"self\":\" \"},\"samples\":[{\"self\":[2]}]}|op 'bad': key 'backward.self': formula \" \" is empty"
  "formula_statement|{\"name\":\"bad\",\"doc\":\"d\",\"args\":[{\"name\":\"self\",\"type\":\"Tensor\"}],\"kernels\":{\"CPU\":\"cpu::mul\"},\"backward\":{\"self\":\"grad } int x = 0 {\"},\"samples\":[{\"self\":[2]}]}|op 'bad': key 'backward.self': formula"
  "dtypes_string|{\"name\":\"bad\",\"doc\":\"d\",\"args\":[{\"name\":\"self\",\"type\":\"Tensor\"}],\"kernels\":{\"CPU\":\"cpu::mul\"},\"backward\":{\"self\":\"grad\"},\"samples\":[{\"self\":[2]}],\"dtypes\":\"all\"}|op 'bad': key 'dtypes': must be a list, got string"
  "variants_string|{\"name\":\"bad\",\"doc\":\"d\",\"args\":[{\"name\":\"self\",\"type\":\"Tensor\"}],\"kernels\":{\"CPU\":\"cpu::mul\"},\"backward\":{\"self\":\"grad\"},\"samples\":[{\"self\":[2]}],\"variants\":\"function\"}|op 'bad': key 'variants': must be a list, got string"
  "returns_object|{\"name\":\"bad\",\"doc\":\"d\",\"args\":[{\"name\":\"self\",\"type\":\"Tensor\"}],\"kernels\":{\"CPU\":\"cpu::mul\"},\"backward\":{\"self\":\"grad\"},\"samples\":[{\"self\":[2]}],\"returns\":{}}|op 'bad': key 'returns': must be a list, got object"
  "backward_list|{\"name\":\"bad\",\"doc\":\"d\",\"args\":[{\"name\":\"self\",\"type\":\"Tensor\"}],\"kernels\":{\"CPU\":\"cpu::mul\"},\"backward\":[\"grad\"],\"samples\":[{\"self\":[2]}]}|op 'bad': key 'backward': must be an object, got array"
  "differentiable_string|{\"name\":\"bad\",\"doc\":\"d\",\"args\":[{\"name\":\"self\",\"type\":\"Tensor\"}],\"kernels\":{\"CPU\":\"cpu::mul\"},\"backward\":{\"self\":\"grad\"},\"samples\":[{\"self\":[2]}],\"differentiable\":\"yes\"}|op 'bad': key 'differentiable': must be true or false, got string"
  "arg_type_number|{\"name\":\"bad\",\"doc\":\"d\",\"args\":[{\"name\":\"self\",\"type\":7}],\"kernels\":{\"CPU\":\"cpu::mul\"},\"backward\":{\"self\":\"grad\"},\"samples\":[{\"self\":[2]}]}|op 'bad': key 'args.self.type': must be a string, got number"
  "kernel_regex|{\"name\":\"bad\",\"doc\":\"d\",\"args\":[{\"name\":\"self\",\"type\":\"Tensor\"}],\"kernels\":{\"CPU\":\"cpu::mul(.*\"},\"backward\":{\"self\":\"grad\"},\"samples\":[{\"self\":[2]}]}|op 'bad': key 'kernels.CPU': 'cpu::mul(.*' is not a qualified C++ name"
  "kernel_number|{\"name\":\"bad\",\"doc\":\"d\",\"args\":[{\"name\":\"self\",\"type\":\"Tensor\"}],\"kernels\":{\"CPU\":3},\"backward\":{\"self\":\"grad\"},\"samples\":[{\"self\":[2]}]}|op 'bad': key 'kernels.CPU': must be a string, got number"
  "default_type|{\"name\":\"bad\",\"doc\":\"d\",\"args\":[{\"name\":\"self\",\"type\":\"Tensor\"},{\"name\":\"k\",\"type\":\"int\",\"default\":\"2\"}],\"kernels\":{\"CPU\":\"cpu::mul\"},\"backward\":{\"self\":\"grad\"},\"samples\":[{\"self\":[2]}]}|op 'bad': key 'args.k.default': default \"2\" does not fit type int"
  "allowed_not_word|{\"name\":\"bad\",\"doc\":\"d\",\"args\":[{\"name\":\"self\",\"type\":\"Tensor\"},{\"name\":\"r\",\"type\":\"string\",\"allowed\":[\"a\\\"b\"]}],\"kernels\":{\"CPU\":\"cpu::mul\"},\"backward\":{\"self\":\"grad\"},\"samples\":[{\"self\":[2]}]}|op 'bad': key 'args.r.allowed': 'a\"b' is not a word"
  "writes_int|{\"name\":\"bad\",\"doc\":\"d\",\"args\":[{\"name\":\"self\",\"type\":\"Tensor\"},{\"name\":\"k\",\"type\":\"int\",\"writes\":true}],\"kernels\":{\"CPU\":\"cpu::mul\"},\"backward\":{\"self\":\"grad\"},\"samples\":[{\"self\":[2]}]}|op 'bad': key 'args.k.writes': only a Tensor or Tensor? argument can be written"
  "writes_differentiable|{\"name\":\"bad\",\"doc\":\"d\",\"args\":[{\"name\":\"self\",\"type\":\"Tensor\",\"writes\":true}],\"kernels\":{\"CPU\":\"cpu::mul\"},\"backward\":{\"self\":\"grad\"},\"samples\":[{\"self\":[2]}]}|op 'bad': key 'args.self.writes': a written argument must be \"differentiable\": false"
  "internal_differentiable|{\"name\":\"bad\",\"doc\":\"d\",\"args\":[{\"name\":\"self\",\"type\":\"Tensor\"}],\"kernels\":{\"CPU\":\"cpu::mul\"},\"backward\":{\"self\":\"grad\"},\"samples\":[{\"self\":[2]}],\"returns\":[{\"name\":\"result\"},{\"name\":\"m\",\"internal\":true}]}|op 'bad': key 'returns.m': an internal output must be \"differentiable\": false"
  "internal_first|{\"name\":\"bad\",\"doc\":\"d\",\"args\":[{\"name\":\"self\",\"type\":\"Tensor\"}],\"kernels\":{\"CPU\":\"cpu::mul\"},\"backward\":{\"self\":\"grad\"},\"samples\":[{\"self\":[2]}],\"returns\":[{\"name\":\"m\",\"differentiable\":false,\"internal\":true},{\"name\":\"result\"}]}|op 'bad': key 'returns.result': internal outputs come after the public ones"
  "internal_only|{\"name\":\"bad\",\"doc\":\"d\",\"args\":[{\"name\":\"self\",\"type\":\"Tensor\"}],\"kernels\":{\"CPU\":\"cpu::mul\"},\"backward\":{\"self\":\"grad\"},\"samples\":[{\"self\":[2]}],\"returns\":[{\"name\":\"m\",\"differentiable\":false,\"internal\":true}]}|op 'bad': key 'returns': an op returns at least one Tensor"
  "deep_samples|{\"name\":\"bad\",\"doc\":\"d\",\"args\":[{\"name\":\"self\",\"type\":\"Tensor\"}],\"kernels\":{\"CPU\":\"cpu::mul\"},\"backward\":{\"self\":\"grad\"},\"samples\":[{\"self\":@DEEP@}]}|ops/specs/deep_samples.json: JSON nested more than 32 levels deep"
)
foreach(case IN LISTS cases)
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 name)
  list(GET parts 1 spec)
  list(GET parts 2 expected)
  set(dir ${WORK}/${name}/specs)
  file(REMOVE_RECURSE ${WORK}/${name})
  file(MAKE_DIRECTORY ${dir} ${WORK}/${name}/backends/cpu)
  # @DEEP@: a value nested 100,000 levels (opgen once crashed on it).
  if(spec MATCHES "@DEEP@")
    string(REPEAT "[" 100000 open)
    string(REPEAT "]" 100000 close)
    string(REPLACE "@DEEP@" "${open}${close}" spec "${spec}")
  endif()
  file(WRITE ${dir}/${name}.json "${spec}")
  file(WRITE ${WORK}/${name}/backends/cpu/k.cpp "namespace tg::cpu { Tensor mul(const Tensor& a, const Tensor& b); }\n")
  file(WRITE ${WORK}/${name}/checks/c.cpp "namespace tg::checks { void mul(const Tensor& a, const Tensor& b); }\n")
  execute_process(COMMAND ${OPGEN} --specs ${dir} --backends ${WORK}/${name}/backends
                          --checks ${WORK}/${name}/checks --tensor-template ${TEMPLATE}
                          --out ${WORK}/${name}/out
                  RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
  if(rc EQUAL 0)
    message(FATAL_ERROR "${name}: opgen accepted a bad spec")
  endif()
  string(FIND "${err}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${name}: expected an error containing\n  ${expected}\ngot\n  ${err}")
  endif()
  message(STATUS "${name}: rejected as expected")
endforeach()
