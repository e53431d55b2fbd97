package dashboard

// Checkbox is an unticked box of the dashboard asking v for key, as the
// renderer writes it.
func Checkbox(v Verb, key string) string { return "- [ ] " + checkbox(v, key) + " text" }

// Bounded is the body as the issue holds it.
var Bounded = bounded
