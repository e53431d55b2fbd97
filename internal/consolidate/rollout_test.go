package consolidate_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/consolidate"
	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/kai"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

func queued(p consolidate.Pod, queue string) consolidate.Pod {
	p.Queue = queue
	return p
}

func withKind(p consolidate.Pod, kind string) consolidate.Pod {
	p.Workload.Kind = kind
	return p
}

// TestRolloutRoom: upsizes whose rollouts were worked by hand, step by
// step as the controllers take them. Each case says why.
func TestRolloutRoom(t *testing.T) {
	chat := ref("ns/chat")
	up := func(ref usage.Ref, f float64) map[usage.Ref]engine.Allocation {
		return map[usage.Ref]engine.Allocation{ref: {Form: engine.Fraction, GPUs: f}}
	}
	twoFull := []consolidate.Pod{
		pod("ns/chat-0", "a", frac(0.3), 0), pod("ns/x-0", "a", frac(0.6), 0),
		pod("ns/chat-1", "b", frac(0.3), 0), pod("ns/y-0", "b", frac(0.6), 0),
	}
	db := usage.Ref{Namespace: "ns", Kind: "StatefulSet", Name: "db"}
	dbPods := []consolidate.Pod{
		withKind(pod("ns/db-0", "a", frac(0.5), 0), "StatefulSet"), pod("ns/x-0", "a", frac(0.4), 0),
		withKind(pod("ns/db-1", "b", frac(0.5), 0), "StatefulSet"), pod("ns/y-0", "b", frac(0.3), 0),
	}
	lws := usage.Ref{Namespace: "ns", Kind: "LeaderWorkerSet", Name: "lws"}
	tests := []struct {
		name     string
		nodes    []consolidate.Node
		pods     []consolidate.Pod
		rollouts []consolidate.Rollout
		queues   kai.Queues
		recs     map[usage.Ref]engine.Allocation
		want     []consolidate.Room
		notes    []string
	}{
		{
			// 2 replicas at the default 25%: maxSurge rounds up to 1,
			// maxUnavailable down to 0. The surge pod wants 0.4 and each
			// GPU has 0.1 free: nothing moves. With maxSurge 0 and
			// maxUnavailable 1, chat-0 leaves first (a has 0.4 free), its
			// replacement takes it exactly, then chat-1 the same on b.
			name:     "the surge pod finds no room; maxSurge 0 fits",
			nodes:    []consolidate.Node{node("a", 1, "a"), node("b", 1, "a")},
			pods:     twoFull,
			rollouts: []consolidate.Rollout{consolidate.DeploymentDefault(chat, 2)},
			recs:     up(chat, 0.4),
			want: []consolidate.Room{{Workload: chat, From: frac(0.3), To: frac(0.4), Pods: 2, GroupSize: 1, MaxSurge: 1,
				Quota: -1, Extra: 0, Why: "no GPU of the pool has 0.40 free while the old pods still hold theirs",
				Suggestion: "maxSurge: 0, maxUnavailable: 1"}},
		},
		{
			// An empty GPU on c takes the surge pod (+0.4); then chat-0
			// leaves (−0.3, a has 0.4 free), the second new pod fills a
			// exactly (+0.4) and chat-1 leaves (−0.3). The workload holds
			// at most 0.5 more than now, after the second new pod.
			name:     "an empty GPU holds the surge",
			nodes:    []consolidate.Node{node("a", 1, "a"), node("b", 1, "a"), node("c", 1, "a")},
			pods:     []consolidate.Pod{queued(twoFull[0], "team"), twoFull[1], queued(twoFull[2], "team"), twoFull[3]},
			rollouts: []consolidate.Rollout{consolidate.DeploymentDefault(chat, 2)},
			recs:     up(chat, 0.4),
			want: []consolidate.Room{{Workload: chat, From: frac(0.3), To: frac(0.4), Pods: 2, GroupSize: 1, MaxSurge: 1,
				Fits: true, Placed: 2, Queue: "team", Quota: -1, Extra: 0.5}},
		},
		{
			// Room as above, but the queue (quota 1.0) already holds 0.9:
			// chat's 0.6 and z's 0.3. The surge pod's 0.4 is over quota.
			// With maxSurge 0 the first replacement fits the quota (0.9 −
			// 0.3 + 0.4 = 1.0) but the second does not (1.1): an upsize
			// the quota cannot hold, whatever the rollout.
			name:  "the queue's quota holds back the surge pod and the upsize",
			nodes: []consolidate.Node{node("a", 1, "a"), node("b", 1, "a"), node("c", 1, "a")},
			pods: []consolidate.Pod{queued(twoFull[0], "team"), twoFull[1], queued(twoFull[2], "team"), twoFull[3],
				queued(pod("ns/z-0", "c", frac(0.3), 0), "team")},
			rollouts: []consolidate.Rollout{consolidate.DeploymentDefault(chat, 2)},
			queues:   kai.Queues{"team": {Name: "team", Quota: 1, Limit: kai.Unlimited}},
			recs:     up(chat, 0.4),
			want: []consolidate.Room{{Workload: chat, From: frac(0.3), To: frac(0.4), Pods: 2, GroupSize: 1, MaxSurge: 1,
				Queue: "team", Quota: 1, Extra: 0, OverQuota: true,
				Why: "its KAI queue team, or a parent, has no quota or limit left for another pod of 0.40 while the old pods still hold theirs"}},
		},
		{
			// The same pool, the queue unbounded but its parent's limit
			// 1.0 (KAI checks every parent, against what its children
			// hold): the parent holds chat's 0.6 and z's 0.3, so the
			// surge pod's 0.4 waits as it did for the quota.
			name:  "a parent queue's limit holds back the surge pod",
			nodes: []consolidate.Node{node("a", 1, "a"), node("b", 1, "a"), node("c", 1, "a")},
			pods: []consolidate.Pod{queued(twoFull[0], "team"), twoFull[1], queued(twoFull[2], "team"), twoFull[3],
				queued(pod("ns/z-0", "c", frac(0.3), 0), "team")},
			rollouts: []consolidate.Rollout{consolidate.DeploymentDefault(chat, 2)},
			queues: kai.Queues{"team": {Name: "team", Parent: "org", Quota: kai.Unlimited, Limit: kai.Unlimited},
				"org": {Name: "org", Quota: kai.Unlimited, Limit: 1}},
			recs: up(chat, 0.4),
			want: []consolidate.Room{{Workload: chat, From: frac(0.3), To: frac(0.4), Pods: 2, GroupSize: 1, MaxSurge: 1,
				Queue: "team", Quota: -1, Extra: 0, OverQuota: true,
				Why: "its KAI queue team, or a parent, has no quota or limit left for another pod of 0.40 while the old pods still hold theirs"}},
		},
		{
			// maxSurge 25% of 10 is 2.5, rounded up to 3; maxUnavailable
			// 25% is 2.5, rounded down to 2 (the Deployment controller's
			// rounding). Only the 2 pods in the pool roll here: both old
			// ones may go at once (−0.6), then both new ones come (+0.8).
			name:     "percentages round as the Deployment controller rounds them",
			nodes:    []consolidate.Node{node("a", 1, "a"), node("b", 1, "a"), node("c", 1, "a")},
			pods:     twoFull,
			rollouts: []consolidate.Rollout{consolidate.DeploymentDefault(chat, 10)},
			recs:     up(chat, 0.4),
			want: []consolidate.Room{{Workload: chat, From: frac(0.3), To: frac(0.4), Pods: 2, GroupSize: 1, MaxSurge: 3,
				MaxUnavailable: 2, Fits: true, Placed: 2, Quota: -1, Extra: 0.2}},
		},
		{
			// maxSurge 0 and maxUnavailable 0 would never start: the
			// controller makes maxUnavailable 1, and that fits. The
			// workload never holds more than its upsize adds, 0.2.
			name:  "both zero: maxUnavailable becomes 1",
			nodes: []consolidate.Node{node("a", 1, "a"), node("b", 1, "a")},
			pods:  twoFull,
			rollouts: []consolidate.Rollout{{Workload: chat, Replicas: 2,
				MaxSurge: consolidate.Count(0), MaxUnavailable: consolidate.Percent(10)}},
			recs: up(chat, 0.4),
			want: []consolidate.Room{{Workload: chat, From: frac(0.3), To: frac(0.4), Pods: 2, GroupSize: 1,
				MaxUnavailable: 1, Fits: true, Placed: 2, Quota: -1, Extra: 0.2}},
		},
		{
			// One pod at a time: db-0 leaves a with 0.6 free, db-0 comes
			// back at 0.6 and fills it; db-1 the same on b (0.7 free).
			name:     "a StatefulSet one pod at a time fits",
			nodes:    []consolidate.Node{node("a", 1, "a"), node("b", 1, "a")},
			pods:     dbPods,
			rollouts: []consolidate.Rollout{consolidate.OnePodAtATime(db, 2)},
			recs:     map[usage.Ref]engine.Allocation{db: {Form: engine.Fraction, GPUs: 0.6}},
			want: []consolidate.Room{{Workload: db, From: frac(0.5), To: frac(0.6), Pods: 2, GroupSize: 1,
				MaxUnavailable: 1, Fits: true, Placed: 2, Quota: -1, Extra: 0.2}},
		},
		{
			// At 0.7, db-0 leaves a with 0.6 free and b has 0.2: the new
			// db-0 fits nowhere. Both down at once free 0.6 and 0.7, which
			// holds one 0.7 only: no setting fits.
			name:     "a StatefulSet that no setting fits",
			nodes:    []consolidate.Node{node("a", 1, "a"), node("b", 1, "a")},
			pods:     dbPods,
			rollouts: []consolidate.Rollout{consolidate.OnePodAtATime(db, 2)},
			recs:     map[usage.Ref]engine.Allocation{db: {Form: engine.Fraction, GPUs: 0.7}},
			want: []consolidate.Room{{Workload: db, From: frac(0.5), To: frac(0.7), Pods: 2, GroupSize: 1,
				MaxUnavailable: 1, Quota: -1, Extra: 0,
				Why: "no GPU of the pool has 0.70 free while the old pods still hold theirs"}},
			notes: []string{"pod ns/db-0 at 0.70 fits no GPU of the pool"},
		},
		{
			// One group of two pods, replaced together. The surge group
			// wants 0.6 twice; a's devices have 0.5 free each, b's 0.4 and
			// 1.0: one pod fits, so the group does not. Without surge the
			// group leaves first, and a's two empty devices take it.
			name:  "a LeaderWorkerSet's group goes whole or not at all",
			nodes: []consolidate.Node{node("a", 2, "a"), node("b", 2, "a")},
			pods: []consolidate.Pod{
				{Namespace: "ns", Name: "lws-0", Workload: lws, Node: "a", Devices: []int{0}, Share: frac(0.5)},
				{Namespace: "ns", Name: "lws-0-1", Workload: lws, Node: "a", Devices: []int{1}, Share: frac(0.5)},
				pod("ns/x-0", "b", frac(0.6), 0),
			},
			rollouts: []consolidate.Rollout{{Workload: lws, Replicas: 1, GroupSize: 2,
				MaxSurge: consolidate.Count(1), MaxUnavailable: consolidate.Count(0)}},
			recs: map[usage.Ref]engine.Allocation{lws: {Form: engine.Fraction, GPUs: 0.6}},
			want: []consolidate.Room{{Workload: lws, From: frac(0.5), To: frac(0.6), Pods: 2, GroupSize: 2, MaxSurge: 1,
				Quota: -1, Extra: 0, Why: "no GPU of the pool has 0.60 free while the old pods still hold theirs",
				Suggestion: "maxSurge: 0, maxUnavailable: 1"}},
		},
		{
			name:  "a placement without rollouts checks none",
			nodes: []consolidate.Node{node("a", 1, "a"), node("b", 1, "a")},
			pods:  twoFull,
			recs:  up(chat, 0.4),
		},
		{
			name:     "an upsize without a known rollout is noted, not checked",
			nodes:    []consolidate.Node{node("a", 1, "a"), node("b", 1, "a")},
			pods:     twoFull,
			rollouts: []consolidate.Rollout{consolidate.DeploymentDefault(ref("ns/other"), 1)},
			recs:     up(chat, 0.4),
			notes:    []string{"workload ns/Deployment/chat: its rollout strategy is unknown, so the room its upsize needs was not checked"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := consolidate.Placement{Nodes: tt.nodes, Pods: tt.pods, Rollouts: tt.rollouts, Queues: tt.queues}
			r := consolidate.Evaluate(poolA(), in, tt.recs)
			for i := range r.Rollouts {
				r.Rollouts[i].Extra = round2(r.Rollouts[i].Extra)
			}
			require.Equal(t, tt.want, r.Rollouts)
			require.Equal(t, tt.notes, r.Notes)
		})
	}
}

func round2(v float64) float64 { return float64(int(v*100+0.5)) / 100 }

func TestRoomSentence(t *testing.T) {
	chat := ref("ns/chat")
	tests := []struct {
		name string
		room consolidate.Room
		want string
	}{
		{
			name: "stalls, with a suggestion",
			room: consolidate.Room{Workload: chat, To: frac(0.4), Pods: 2, Why: "no GPU of the pool has 0.40 free while the old pods still hold theirs",
				Suggestion: "maxSurge: 0, maxUnavailable: 1"},
			want: "the rollout of chat to 0.40 stalls after 0 of 2 new pods: no GPU of the pool has 0.40 free while the old pods still hold theirs; maxSurge: 0, maxUnavailable: 1 fits",
		},
		{
			name: "stalls, nothing fits",
			room: consolidate.Room{Workload: chat, To: frac(0.7), Pods: 2, Placed: 1, Why: "x"},
			want: "the rollout of chat to 0.70 stalls after 1 of 2 new pods: x; no rollout setting fits: free room in the pool first",
		},
		{
			name: "stalls on quota, nothing fits",
			room: consolidate.Room{Workload: chat, To: frac(0.4), Pods: 2, OverQuota: true, Why: "x"},
			want: "the rollout of chat to 0.40 stalls after 0 of 2 new pods: x; no rollout setting fits: the queue's quota or limit does not hold the upsize",
		},
		{
			name: "fits",
			room: consolidate.Room{Workload: chat, To: frac(0.4), Pods: 2, MaxSurge: 1, Fits: true, Placed: 2},
			want: "the rollout of chat to 0.40 fits: with maxSurge 1 and maxUnavailable 0 every new pod finds room while the old ones still hold theirs",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, tt.room.Sentence())
		})
	}
}
