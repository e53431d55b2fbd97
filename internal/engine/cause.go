package engine

// Cause says why a decision changes nothing. Its values are a contract:
// they appear in JSON output, and the pull-request lifecycle acts on them.
type Cause string

const (
	// CauseFits: usage fits the current allocation.
	CauseFits Cause = "fits"
	// CauseNoBaseline: usage is low, but without a proactive baseline
	// nothing may scale back.
	CauseNoBaseline Cause = "no-baseline"
	// CauseAtBound: the ceiling or the floor leaves nothing to change.
	CauseAtBound Cause = "at-bound"
	// CauseBelowMinChange: the change is smaller than the strategy's
	// minimum, or than the request form's step.
	CauseBelowMinChange Cause = "below-min-change"
	// CauseNotAllowed: the strategy does not allow the change.
	CauseNotAllowed Cause = "not-allowed"
	// CauseDataIncomplete: samples are missing where the decision needs
	// them (gaps, too little history, no data).
	CauseDataIncomplete Cause = "data-incomplete"
	// CauseDataInvalid: NaN, infinite, negative or out-of-range samples lie in a window
	// a scale-back relies on.
	CauseDataInvalid Cause = "data-invalid"
	// CauseDataMixed: a pod's series mix readings the query cannot tell
	// apart (two clusters or Prometheus replicas in one store), so no
	// number is trusted either way.
	CauseDataMixed Cause = "data-mixed"
	// CauseDataStale: no running pod reports now.
	CauseDataStale Cause = "data-stale"
	// CauseTooYoung: the pods that run now are too young to judge.
	CauseTooYoung Cause = "too-young"
	// CauseQueryFailed: the usage query failed.
	CauseQueryFailed Cause = "query-failed"
	// CauseEditRefused: the decision wanted a change the editor could not
	// write exactly.
	CauseEditRefused Cause = "edit-refused"
	// CauseOutOfScope: no policy selects the workload.
	CauseOutOfScope Cause = "out-of-scope"
	// CauseDuplicated: the workload is defined more than once.
	CauseDuplicated Cause = "duplicated"
	// CausePolicyInvalid: a policy that could govern it is invalid, or its
	// strategy is missing.
	CausePolicyInvalid Cause = "policy-invalid"
	// CausePolicyConflict: two policies claim it and neither wins.
	CausePolicyConflict Cause = "policy-conflict"
	// CauseUnsupported: it asks for GPU in a form the tool does not size.
	CauseUnsupported Cause = "unsupported"
	// CauseManifestInvalid: its GPU request is in doubt (KAI would refuse
	// it, or it cannot be edited safely).
	CauseManifestInvalid Cause = "manifest-invalid"
	// CauseUnmapped: the repository maps its clusters, and no cluster's
	// paths hold the workload's definition: which cluster runs it, and so
	// which usage is its own, is not known.
	CauseUnmapped Cause = "unmapped"
)

// Conclusive reports whether the cause is a judgement made on good data
// under valid policies. A pull request whose change now has a conclusive
// cause is obsolete and may be closed; with any other cause the inputs are
// in doubt, and an open pull request is left as it is.
func (c Cause) Conclusive() bool {
	switch c {
	case CauseFits, CauseNoBaseline, CauseAtBound, CauseBelowMinChange, CauseNotAllowed, CauseOutOfScope:
		return true
	}
	return false
}

// aboutData reports whether the cause says the usage data is in doubt.
func (c Cause) aboutData() bool {
	switch c {
	case CauseDataIncomplete, CauseDataInvalid, CauseDataMixed, CauseDataStale, CauseTooYoung:
		return true
	}
	return false
}

// NoUpsizeNeeded reports whether a decision that changes nothing shows,
// on data good enough to say so, that no upsize is needed: its cause is
// conclusive, or the data lacks only what a downsize needs (a day of
// history, no old gaps, a young pod's age). Missing or invalid recent
// samples do not count: they may hide the very pressure an upsize answers. An
// open upsize pull request whose workload now has such a decision is
// obsolete; a scale-back one is not, since its data is still in doubt.
func (d Decision) NoUpsizeNeeded() bool {
	if d.Action.Changes() {
		return false
	}
	if d.Cause.Conclusive() {
		return true
	}
	if !d.Cause.aboutData() || d.Evidence.Shortfall == nil || len(d.Evidence.Upsizes) > 0 {
		return false
	}
	switch d.Evidence.Shortfall.Kind {
	case ShortHistory, ShortGap, ShortYoungPod:
		return true
	}
	return false
}
