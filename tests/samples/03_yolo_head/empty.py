# about: handed in untouched
# expect: auto=0
# expect: decode_matches_legacy_tests=0 decode_contract_tests=0 decode_gradients_tests=0 decode_no_inplace_on_saved_tests=0 fixed_detect_tests=0 attack_tests=0
