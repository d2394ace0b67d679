# about: empty: downloaded the assignment and handed it in untouched
# expect: auto=0
# visible: fail=environment_report_tests,cube_sum_grad_tests,grad_fn_chain_tests,intermediate_grad_tests
