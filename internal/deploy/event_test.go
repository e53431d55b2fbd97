package deploy_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/gpu-rightsizing/recommender/internal/notify"
	"github.com/gpu-rightsizing/recommender/internal/summary"
	"github.com/gpu-rightsizing/recommender/internal/testenv/kubeenv"
)

// TestChartEventOnCluster: with the chart installed on a real
// kube-apiserver, the job's own ServiceAccount — holding only what the
// chart grants — records a run's Event on the CronJob the chart's
// environment names, where `kubectl describe cronjob` finds it (by the
// CronJob's UID, through the core v1 API); on another CronJob it may not.
func TestChartEventOnCluster(t *testing.T) {
	vals := readValues(t, minimalSet)
	objs := render(t, vals)
	var named string
	for _, e := range objs.CronJob.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "RECOMMENDER_EVENT_CRONJOB" {
			named = e.Value
		}
	}
	cj, err := notify.ParseCronJob(named)
	require.NoError(t, err, "the chart names its CronJob for the Event")
	require.Equal(t, notify.CronJob{Namespace: namespace, Name: objs.CronJob.Name}, cj)

	kube := kubeenv.StartAPIServer(t)
	if kube == nil {
		return
	}
	manifest := []string{"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + namespace + "\n"}
	for _, d := range renderDocs(t, vals) {
		manifest = append(manifest, d.text)
	}
	// Another CronJob in the namespace, which the job may not touch.
	manifest = append(manifest, strings.ReplaceAll(renderedCronJob(t, vals), "name: "+cj.Name+"\n", "name: other\n"))
	kube.Apply(t, []byte(strings.Join(manifest, "\n---\n")))

	// The ServiceAccount's own token, as the pod would mount it.
	sa := objs.CronJob.Spec.JobTemplate.Spec.Template.Spec.ServiceAccountName
	status, body := kube.Do(t, kubeenv.Admin, http.MethodPost, "/api/v1/namespaces/"+namespace+"/serviceaccounts/"+sa+"/token",
		[]byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":600}}`), "application/json")
	require.Equal(t, http.StatusCreated, status, "%s", body)
	var tr struct {
		Status struct{ Token string } `json:"status"`
	}
	require.NoError(t, json.Unmarshal(body, &tr))
	rec, err := notify.NewRecorder(&rest.Config{Host: kube.URL, BearerToken: tr.Status.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: kube.CAData}}, "gpu-recommender-29408417-x7k2p")
	require.NoError(t, err)

	end := time.Date(2026, 11, 30, 12, 0, 3, 0, time.UTC)
	s := summary.New(summary.Run{Outcome: summary.Failed, Err: errors.New("clone: 401 Unauthorized"), Started: end.Add(-3 * time.Second), Duration: 3 * time.Second})
	require.NoError(t, rec.Record(t.Context(), cj, s, end))

	status, body = kube.Do(t, kubeenv.Admin, http.MethodGet, "/apis/batch/v1/namespaces/"+namespace+"/cronjobs/"+cj.Name, nil, "")
	require.Equal(t, http.StatusOK, status, "%s", body)
	var cronJob struct {
		Metadata struct{ UID string } `json:"metadata"`
	}
	require.NoError(t, json.Unmarshal(body, &cronJob))
	sel := url.QueryEscape("involvedObject.kind=CronJob,involvedObject.name=" + cj.Name + ",involvedObject.uid=" + cronJob.Metadata.UID)
	status, body = kube.Do(t, kubeenv.Admin, http.MethodGet, "/api/v1/namespaces/"+namespace+"/events?fieldSelector="+sel, nil, "")
	require.Equal(t, http.StatusOK, status, "%s", body)
	var events struct {
		Items []struct {
			Type, Reason, Message, Action, ReportingComponent, ReportingInstance string
		} `json:"items"`
	}
	require.NoError(t, json.Unmarshal(body, &events))
	require.Len(t, events.Items, 1, "%s", body)
	ev := events.Items[0]
	require.Equal(t, "Warning", ev.Type)
	require.Equal(t, "RunFailed", ev.Reason)
	require.Equal(t, "Run", ev.Action)
	require.Equal(t, notify.Controller, ev.ReportingComponent)
	require.Equal(t, "gpu-recommender-29408417-x7k2p", ev.ReportingInstance)
	require.Equal(t, "GPU rightsizing run failed: no pull request; 0 upsize, 0 scaleBack, 0 none, 0 skipped; took 3.0s; error: clone: 401 Unauthorized", ev.Message)

	err = rec.Record(t.Context(), notify.CronJob{Namespace: namespace, Name: "other"}, s, end)
	require.ErrorIs(t, err, notify.ErrEvent)
	require.ErrorContains(t, err, "get cronjob "+namespace+"/other")
	require.ErrorContains(t, err, "forbidden")
}

// renderedCronJob is the chart's CronJob as rendered.
func renderedCronJob(t *testing.T, vals map[string]any) string {
	t.Helper()
	for _, d := range renderDocs(t, vals) {
		if d.meta.Kind == "CronJob" {
			return d.text
		}
	}
	t.Fatal("the chart renders no CronJob")
	return ""
}
