package notify

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpu-rightsizing/recommender/internal/summary"
)

// Controller is the Event's reportingController: the tool, by the name
// its live changes' field manager has.
const Controller = "gpu-rightsizing-recommender"

// CronJob names the CronJob a run's Event goes on.
type CronJob struct{ Namespace, Name string }

func (c CronJob) String() string { return c.Namespace + "/" + c.Name }

// ParseCronJob reads NAMESPACE/NAME.
func ParseCronJob(s string) (CronJob, error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok {
		return CronJob{}, fmt.Errorf("%q: want NAMESPACE/NAME", s)
	}
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return CronJob{}, fmt.Errorf("namespace %q: %s", ns, errs[0])
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return CronJob{}, fmt.Errorf("name %q: %s", name, errs[0])
	}
	return CronJob{ns, name}, nil
}

// Event is what a run's Event says: Normal, or Warning for a run that
// failed or refused input; a reason per outcome; the headline as its
// note.
func Event(s summary.Summary) (eventType, reason, note string) {
	eventType, reason = corev1.EventTypeNormal, "NothingToDo"
	switch s.Outcome {
	case summary.ChangesProposed:
		reason = "ChangesProposed"
	case summary.Problems:
		eventType, reason = corev1.EventTypeWarning, "ProblemsFound"
	case summary.Failed:
		eventType, reason = corev1.EventTypeWarning, "RunFailed"
	}
	return eventType, reason, truncate(s.Headline(), maxNote)
}

// maxNote is the API server's bound on an Event's note, in bytes.
const maxNote = 1024

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// ErrEvent marks an Event that could not be recorded.
var ErrEvent = errors.New("event")

// Recorder records runs' Events through the events.k8s.io/v1 API, which
// needs only `get` on the one CronJob (for its UID, by which kubectl
// finds its Events) and `create` on events.
type Recorder struct {
	kube kubernetes.Interface
	// Instance is the reportingInstance: the pod's name.
	Instance string
}

// NewRecorder is a Recorder on the cluster of cfg.
func NewRecorder(cfg *rest.Config, instance string) (*Recorder, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.UserAgent == "" {
		cfg.UserAgent = Controller
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: kubernetes client: %w", ErrEvent, err)
	}
	if instance == "" {
		instance = Controller
	}
	return &Recorder{kube: kube, Instance: instance}, nil
}

// Record creates the Event of a run that ended at now on cj.
func (r *Recorder) Record(ctx context.Context, cj CronJob, s summary.Summary, now time.Time) error {
	obj, err := r.kube.BatchV1().CronJobs(cj.Namespace).Get(ctx, cj.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("%w: get cronjob %s: %w", ErrEvent, cj, err)
	}
	typ, reason, note := Event(s)
	ev := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{
			// As client-go's recorders name theirs: the object's name and
			// the time, unique enough for one run.
			Name:      cj.Name + "." + strconv.FormatInt(now.UnixNano(), 16),
			Namespace: cj.Namespace,
		},
		EventTime:           metav1.NewMicroTime(now),
		ReportingController: Controller,
		ReportingInstance:   truncate(r.Instance, 128),
		Action:              "Run",
		Reason:              reason,
		Type:                typ,
		Note:                note,
		Regarding: corev1.ObjectReference{
			APIVersion: "batch/v1", Kind: "CronJob", Namespace: cj.Namespace, Name: cj.Name,
			UID: obj.UID, ResourceVersion: obj.ResourceVersion,
		},
	}
	if _, err := r.kube.EventsV1().Events(cj.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("%w: create event on cronjob %s: %w", ErrEvent, cj, err)
	}
	return nil
}
