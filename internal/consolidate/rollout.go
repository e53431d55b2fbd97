package consolidate

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/gpu-rightsizing/recommender/internal/kai"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// Amount is a rolling update's maxSurge or maxUnavailable as a spec
// writes it: a count, or a percent of the replicas.
type Amount struct {
	Value   int  `json:"value"`
	Percent bool `json:"percent,omitempty"`
}

// Count is an absolute maxSurge or maxUnavailable.
func Count(n int) Amount { return Amount{Value: n} }

// Percent is a maxSurge or maxUnavailable of p percent of the replicas.
func Percent(p int) Amount { return Amount{Value: p, Percent: true} }

// of is the amount for replicas as the Deployment controller scales it
// (intstr.GetScaledValueFromIntOrPercent): a percent of maxSurge rounds
// up, one of maxUnavailable down.
func (a Amount) of(replicas int, up bool) int {
	if !a.Percent {
		return max(0, a.Value)
	}
	v := max(0, replicas) * max(0, a.Value)
	if up {
		return (v + 99) / 100
	}
	return v / 100
}

func (a Amount) String() string {
	if a.Percent {
		return strconv.Itoa(a.Value) + "%"
	}
	return strconv.Itoa(a.Value)
}

// Rollout is how a workload's controller replaces its pods when its pod
// template changes: a Deployment's or an Argo Rollout's rolling update
// (maxSurge and maxUnavailable; Recreate is maxUnavailable 100%), a
// StatefulSet's one pod at a time (maxSurge 0, maxUnavailable 1), a
// LeaderWorkerSet's whole groups.
type Rollout struct {
	Workload usage.Ref `json:"workload"`
	// Replicas counts what the controller replaces: pods, or a
	// LeaderWorkerSet's groups.
	Replicas int `json:"replicas"`
	// GroupSize is the pods of one group, replaced together (a
	// LeaderWorkerSet's size); 0 or 1 is one pod.
	GroupSize      int    `json:"groupSize,omitempty"`
	MaxSurge       Amount `json:"maxSurge"`
	MaxUnavailable Amount `json:"maxUnavailable"`
}

// DeploymentDefault is a Deployment's strategy when its spec names none:
// a rolling update with maxSurge and maxUnavailable of 25%.
func DeploymentDefault(w usage.Ref, replicas int) Rollout {
	return Rollout{Workload: w, Replicas: replicas, MaxSurge: Percent(25), MaxUnavailable: Percent(25)}
}

// OnePodAtATime is a StatefulSet's rolling update: each pod is deleted,
// then created again at the new template.
func OnePodAtATime(w usage.Ref, replicas int) Rollout {
	return Rollout{Workload: w, Replicas: replicas, MaxSurge: Count(0), MaxUnavailable: Count(1)}
}

// resolved is maxSurge and maxUnavailable in units, with the Deployment
// controller's fencepost: both zero makes maxUnavailable one, or the
// rollout could never start.
func (r Rollout) resolved() (surge, unavailable int) {
	surge, unavailable = r.MaxSurge.of(r.Replicas, true), r.MaxUnavailable.of(r.Replicas, false)
	if surge == 0 && unavailable == 0 {
		unavailable = 1
	}
	return surge, unavailable
}

func (r Rollout) groupSize() int { return max(1, r.GroupSize) }

// Room says whether an upsize's rollout finds room in its pool: the new
// pods, at the recommended share, placed while the old ones still hold
// theirs, as the workload's controller replaces them.
type Room struct {
	Workload usage.Ref `json:"workload"`
	// From and To are one pod's share now and once the pull request
	// merges.
	From Share `json:"from"`
	To   Share `json:"to"`
	// Pods counts the workload's pods in the pool, replaced GroupSize at
	// a time; MaxSurge and MaxUnavailable are the rollout's, in units.
	Pods           int `json:"pods"`
	GroupSize      int `json:"groupSize"`
	MaxSurge       int `json:"maxSurge"`
	MaxUnavailable int `json:"maxUnavailable"`
	// Fits is true when every new pod finds room.
	Fits bool `json:"fits"`
	// Placed counts the new pods placed before the rollout stalls: the
	// rest would stay Pending.
	Placed int `json:"placed"`
	// Extra is the most share the rollout holds above what the workload
	// holds now, in GPUs: the surge the pool and the queue must give.
	Extra float64 `json:"extra"`
	// Queue is the pods' KAI queue and Quota its GPU quota (negative when
	// unlimited or unknown); OverQuota when a new pod is held back by a
	// bound of the queue or of a parent (kai.Queues.Room).
	Queue     string  `json:"queue,omitempty"`
	Quota     float64 `json:"quota"`
	OverQuota bool    `json:"overQuota"`
	// Suggestion is rollout settings that fit, when the workload's own do
	// not; "" when they do or when none does.
	Suggestion string `json:"suggestion,omitempty"`
	// Why says what stalls the rollout, "" when it fits.
	Why string `json:"why,omitempty"`
}

// Sentence says the finding for a pull request and a report.
func (r Room) Sentence() string {
	if r.Fits {
		return fmt.Sprintf("the rollout of %s to %s fits: with maxSurge %d and maxUnavailable %d every new pod finds room while the old ones still hold theirs",
			r.Workload.Name, r.To, r.MaxSurge, r.MaxUnavailable)
	}
	s := fmt.Sprintf("the rollout of %s to %s stalls after %d of %d new pods: %s", r.Workload.Name, r.To, r.Placed, r.Pods, r.Why)
	switch {
	case r.Suggestion != "":
		return s + "; " + r.Suggestion + " fits"
	case r.OverQuota:
		return s + "; no rollout setting fits: the queue's quota or limit does not hold the upsize"
	}
	return s + "; no rollout setting fits: free room in the pool first"
}

// rolloutRoom checks the rollout of every upsize with pods in the pool,
// each alone against the pool as it is now (s, which it does not
// change): another pull request's rollout is its own business. all is
// the whole cluster's pods, for the queues' use. Without rollouts (a
// placement source that reads none) nothing is checked.
func (pl *pool) rolloutRoom(s state, all []Pod, rollouts []Rollout, queues kai.Queues) []Room {
	if rollouts == nil {
		return nil
	}
	byRef := map[usage.Ref]Rollout{}
	for _, r := range rollouts {
		byRef[r.Workload] = r
	}
	held := map[string]float64{}
	for _, p := range all {
		if p.Queue != "" {
			held[p.Queue] += p.Share.GPUs()
		}
	}
	var refs []usage.Ref
	pods := map[usage.Ref][]int{}
	for i, p := range pl.pods {
		if pl.pos[i].node < 0 || !upsized(p.Share, pl.after[i]) {
			continue
		}
		if _, seen := pods[p.Workload]; !seen {
			refs = append(refs, p.Workload)
		}
		pods[p.Workload] = append(pods[p.Workload], i)
	}
	slices.SortFunc(refs, compareRef)
	var out []Room
	for _, ref := range refs {
		ro, ok := byRef[ref]
		if !ok {
			pl.note("workload %s: its rollout strategy is unknown, so the room its upsize needs was not checked", ref)
			continue
		}
		idx := pods[ref]
		first := pl.pods[idx[0]]
		quota := float64(kai.Unlimited)
		if q, ok := queues[first.Queue]; ok {
			quota = q.Quota
		}
		budget := steps(queues.Room(first.Queue, held, kai.NonPreemptible(ref.Kind, "")))
		room := Room{Workload: ref, From: first.Share, To: pl.after[idx[0]], Pods: len(idx), GroupSize: ro.groupSize(),
			Queue: first.Queue, Quota: quota}
		room.MaxSurge, room.MaxUnavailable = ro.resolved()
		units := groups(idx, ro.groupSize())
		sim := pl.roll(s.clone(), units, room.MaxSurge, room.MaxUnavailable, budget)
		room.Fits, room.Extra = sim.done, float64(sim.peak)/full
		for _, u := range units[:sim.placed] {
			room.Placed += len(u)
		}
		room.OverQuota = sim.quota
		if !room.Fits {
			room.Why = sim.why(pl, units)
			room.Suggestion = pl.suggest(s, units, ro, budget)
		}
		out = append(out, room)
	}
	return out
}

// upsized reports whether a resize takes more share than the pod holds.
func upsized(from, to Share) bool {
	return to.steps()*to.devices() > from.steps()*from.devices()
}

func compareRef(a, b usage.Ref) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
}

// groups cuts a workload's pods into the units its controller replaces.
func groups(idx []int, size int) [][]int {
	var out [][]int
	for len(idx) > 0 {
		n := min(size, len(idx))
		out = append(out, idx[:n])
		idx = idx[n:]
	}
	return out
}

// steps is a queue's room in the grid's steps, rounded down; MaxInt when
// nothing bounds it.
func steps(room float64) int {
	if math.IsInf(room, 1) {
		return math.MaxInt
	}
	return int(math.Floor(room*full + 1e-9))
}

// simulation is how a rollout went.
type simulation struct {
	done   bool
	placed int
	// peak is the most the workload held above its share before the
	// rollout, in steps.
	peak int
	// quota is true when the last unit that did not fit had room but no
	// quota.
	quota bool
}

func (sim simulation) why(pl *pool, units [][]int) string {
	i := units[sim.placed][0]
	if sim.quota {
		return fmt.Sprintf("its KAI queue %s, or a parent, has no quota or limit left for another pod of %s while the old pods still hold theirs",
			pl.pods[i].Queue, pl.after[i])
	}
	return fmt.Sprintf("no GPU of the pool has %s free while the old pods still hold theirs", pl.after[i])
}

// roll replaces the units as the Deployment controller does, in s: it
// scales the new pods up to replicas + surge in all, scales the old ones
// down while replicas − unavailable stay available (a placed new pod is
// counted available at once), and places each new unit, all its pods or
// none, by best fit anywhere in the pool, until every unit is new or
// nothing moves. Old units leave in the pods' name order: which old pod
// the controller deletes first is its own choice, and not modelled.
// budget is the steps the queue can still give.
func (pl *pool) roll(s state, units [][]int, surge, unavailable, budget int) simulation {
	var sim simulation
	n := len(units)
	old, pending, extra := n, 0, 0
	for {
		moved := false
		if up := min(n+surge-(old+sim.placed+pending), n-sim.placed-pending); up > 0 {
			pending += up
		}
		for old > 0 && old+sim.placed-1 >= n-unavailable {
			for _, i := range units[n-old] {
				at := pl.pos[i]
				s.give(at.node, at.devs, pl.pods[i].Share.steps())
				extra -= pl.pods[i].Share.steps() * len(at.devs)
			}
			old--
			moved = true
		}
		for pending > 0 {
			need := 0
			for _, i := range units[sim.placed] {
				need += pl.after[i].steps() * pl.after[i].devices()
			}
			if extra+need > budget {
				sim.quota = true
				break
			}
			if !pl.placeUnit(s, units[sim.placed]) {
				sim.quota = false
				break
			}
			extra += need
			sim.peak = max(sim.peak, extra)
			pending--
			sim.placed++
			moved = true
		}
		if sim.placed == n {
			sim.done = true
			return sim
		}
		if !moved {
			return sim
		}
	}
}

// placeUnit places every pod of a unit at its new share, or none.
func (pl *pool) placeUnit(s state, unit []int) bool {
	type took struct {
		node int
		devs []int
		per  int
	}
	var done []took
	for _, i := range unit {
		sh := pl.after[i]
		node, devs, ok := s.best(sh.steps(), sh.devices(), where{})
		if !ok {
			for _, t := range done {
				s.give(t.node, t.devs, t.per)
			}
			return false
		}
		s.take(node, devs, sh.steps())
		done = append(done, took{node, devs, sh.steps()})
	}
	return true
}

// suggest finds the gentlest rollout settings that fit: no surge and the
// fewest units down at once. A StatefulSet already goes one pod at a
// time, so only a larger maxUnavailable could help it.
func (pl *pool) suggest(s state, units [][]int, ro Rollout, budget int) string {
	surge, unavailable := ro.resolved()
	for u := 1; u <= len(units); u++ {
		if surge == 0 && u <= unavailable {
			continue
		}
		if pl.roll(s.clone(), units, 0, u, budget).done {
			return fmt.Sprintf("maxSurge: 0, maxUnavailable: %d", u)
		}
	}
	return ""
}
