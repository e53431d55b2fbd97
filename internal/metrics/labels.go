package metrics

import "strings"

// ExportedPrefix is what Prometheus puts before a scraped label that
// collides with a target label when honor_labels is false, the default of
// a ServiceMonitor.
const ExportedPrefix = "exported_"

// label returns the value of the label called name in ls, which is sorted.
//
// An exported_<name> label wins over <name>: it only exists when the scrape
// renamed the exporter's own label to make room for the target's, so
// <name> then describes the exporter pod, not the workload's pod. exported
// reports that the value came from exported_<name>.
func label(ls []Label, name string) (value string, exported, ok bool) {
	if name == "" {
		return "", false, false
	}
	for _, l := range ls {
		switch {
		case l.Name == name:
			value, ok = l.Value, true
		case len(l.Name) == len(ExportedPrefix)+len(name) &&
			strings.HasPrefix(l.Name, ExportedPrefix) && l.Name[len(ExportedPrefix):] == name:
			return l.Value, true, true
		}
	}
	return value, false, ok
}

// LabelValue is the value of the label called name in ls (sorted), its
// exported_<name> first as label reads it; "" when neither is there.
func LabelValue(ls []Label, name string) string {
	v, _, _ := label(ls, name)
	return v
}
