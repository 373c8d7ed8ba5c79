# Runs tg_opgen on each bad spec below and checks that it fails naming the file, the op and the key.
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
)
foreach(case IN LISTS cases)
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 name)
  list(GET parts 1 spec)
  list(GET parts 2 expected)
  set(dir ${WORK}/${name}/specs)
  file(REMOVE_RECURSE ${WORK}/${name})
  file(MAKE_DIRECTORY ${dir} ${WORK}/${name}/backends/cpu)
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
