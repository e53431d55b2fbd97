# Sourced by the backtest scripts: one-edit variants of a policy file.
# The caller sets edited (the policy file every variant starts from) and
# dir (where the variants go, as NAME.yaml).

# variant NAME SED-SCRIPT: the policy with one edit.
variant() { sed "$2" "$edited" >"$dir/$1.yaml"; }
# Fields of the strategy's gitops go after liveUpsize; fields of the
# proactive policy before its automationStrategyRef (the first one in the
# file after "kind: ClusterProactivePolicy"). proactive takes one or more
# fields, one per argument after the name.
strategy() { variant "$1" "/^    liveUpsize: true/a\\
    $2"; }
proactive() {
	local name=$1 fields=""
	shift
	for f in "$@"; do fields="$fields\\
  $f"; done
	variant "$name" "/^kind: ClusterProactivePolicy/,/^  automationStrategyRef:/{/^  automationStrategyRef:/i\\${fields#\\
}
}"
}
