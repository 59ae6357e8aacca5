# expect: build_error
# reason: importing the submission failed

raise ValueError("broken at import")
