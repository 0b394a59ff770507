package coordinator

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"slices"

	"github.com/msjfarm/msjfarm/sweep"
)

// fullTasks is the largest campaign whose tasks the coordinator holds in
// full. A task is a few hundred bytes in memory: 10^6 of them held 1.3 GB
// and 10^7 did not fit. A larger campaign keeps only its task ids (12
// bytes each, and a sorted index of 4 bytes each) and generates the tasks
// from the sweep when it needs them (sweep.Campaign.TaskAt), in order.
var fullTasks = 1 << 16

// taskList is a campaign's tasks: in full (small campaigns, and precision
// campaigns, which add replications), or as ids plus the sweep that
// generates them.
type taskList struct {
	camp *sweep.Campaign
	// full mode
	full  []sweep.Task
	index map[string]int
	// compact mode
	ids    [][12]byte
	sorted []int32 // positions in ids, by id
	// listHash caches TaskListHash ("" when tasks were added since).
	listHash string
	// points caches the point ids in order.
	points []string
	// byPoint caches the positions of each point's tasks in a full list
	// of byPointLen tasks (pointTasks).
	byPoint    [][]int32
	byPointLen int
	// pointOf caches the point (its position in Points) of each task of
	// a full list of pointOfLen tasks (pointAt).
	pointOf    []int32
	pointOfLen int
}

// newTaskList holds camp's tasks, in full when it is small or in
// precision mode.
func newTaskList(camp *sweep.Campaign) (*taskList, error) {
	tl := &taskList{camp: camp}
	n := camp.Len()
	if n <= fullTasks || camp.File.Precision != nil {
		tl.full = make([]sweep.Task, 0, n)
		tl.index = make(map[string]int, n)
		err := camp.Each(func(t sweep.Task) error {
			tl.index[t.ID] = len(tl.full)
			tl.full = append(tl.full, t)
			return nil
		})
		return tl, err
	}
	tl.ids = make([][12]byte, 0, n)
	tl.points = make([]string, 0, camp.Points)
	if err := camp.Each(func(t sweep.Task) error {
		// A point's replications are consecutive.
		if len(tl.points) == 0 || tl.points[len(tl.points)-1] != t.Point {
			tl.points = append(tl.points, t.Point)
		}
		var b [12]byte
		if _, err := hex.Decode(b[:], []byte(t.ID)); err != nil {
			return err
		}
		tl.ids = append(tl.ids, b)
		return nil
	}); err != nil {
		return nil, err
	}
	tl.sorted = make([]int32, n)
	for i := range tl.sorted {
		tl.sorted[i] = int32(i)
	}
	slices.SortFunc(tl.sorted, func(a, b int32) int { return bytes.Compare(tl.ids[a][:], tl.ids[b][:]) })
	return tl, nil
}

// Len is the number of tasks.
func (tl *taskList) Len() int {
	if tl.full != nil || tl.ids == nil {
		return len(tl.full)
	}
	return len(tl.ids)
}

// ID is the id of task i.
func (tl *taskList) ID(i int) string {
	if tl.ids == nil {
		return tl.full[i].ID
	}
	return hex.EncodeToString(tl.ids[i][:])
}

// Index is the position of task tid.
func (tl *taskList) Index(tid string) (int, bool) {
	if tl.ids == nil {
		i, ok := tl.index[tid]
		return i, ok
	}
	var b [12]byte
	if len(tid) != 24 {
		return 0, false
	}
	if _, err := hex.Decode(b[:], []byte(tid)); err != nil {
		return 0, false
	}
	j, ok := slices.BinarySearchFunc(tl.sorted, b, func(p int32, b [12]byte) int { return bytes.Compare(tl.ids[p][:], b[:]) })
	if !ok {
		return 0, false
	}
	return int(tl.sorted[j]), true
}

// Has reports whether tid is a task of the list.
func (tl *taskList) Has(tid string) bool {
	_, ok := tl.Index(tid)
	return ok
}

// At is task i, generated again in compact mode (in order, one scenario
// at a time: see sweep.Campaign.TaskAt).
func (tl *taskList) At(i int) sweep.Task {
	if tl.ids == nil {
		return tl.full[i]
	}
	t, err := tl.camp.TaskAt(i)
	if err != nil {
		// The campaign was planned, so each of its tasks generates.
		panic("coordinator: generating task: " + err.Error())
	}
	return t
}

// Get is task tid.
func (tl *taskList) Get(tid string) (sweep.Task, bool) {
	i, ok := tl.Index(tid)
	if !ok {
		return sweep.Task{}, false
	}
	return tl.At(i), true
}

// Append adds a replication to a point (precision mode: full lists only).
func (tl *taskList) Append(t sweep.Task) {
	tl.index[t.ID] = len(tl.full)
	tl.full = append(tl.full, t)
	tl.listHash = ""
}

// Full is the list of tasks in full mode, nil in compact mode.
func (tl *taskList) Full() []sweep.Task {
	if tl.ids != nil {
		return nil
	}
	return tl.full[:len(tl.full):len(tl.full)]
}

// All is every task (generated in compact mode).
func (tl *taskList) All() []sweep.Task {
	if tl.ids == nil {
		return tl.Full()
	}
	out := make([]sweep.Task, tl.Len())
	for i := range out {
		out[i] = tl.At(i)
	}
	return out
}

// Hash is the manifest's task_list_sha256: the sha256 of the task ids in
// order, one per line (sweep.Campaign.TaskListHash; with replications
// added in precision mode, ordered by point and replication).
func (tl *taskList) Hash() string {
	if tl.listHash != "" {
		return tl.listHash
	}
	h := sha256.New()
	if tl.ids == nil && len(tl.full) > tl.camp.Len() {
		// Replications added in precision mode: the list is ordered by
		// point, then replication, as readers order it
		// (results/archive.Load).
		pos := map[string]int{}
		for i, p := range tl.Points() {
			pos[p] = i
		}
		tasks := slices.Clone(tl.full)
		slices.SortStableFunc(tasks, func(a, b sweep.Task) int {
			if pa, pb := pos[a.Point], pos[b.Point]; pa != pb {
				return pa - pb
			}
			return a.Replication - b.Replication
		})
		for _, t := range tasks {
			h.Write([]byte(t.ID + "\n"))
		}
	} else {
		for i := range tl.Len() {
			h.Write([]byte(tl.ID(i) + "\n"))
		}
	}
	tl.listHash = hex.EncodeToString(h.Sum(nil))
	return tl.listHash
}

// Points are the point ids in campaign order (a point's replications are
// consecutive in the expansion; the ones precision mode adds are of
// existing points).
func (tl *taskList) Points() []string {
	if tl.points != nil {
		return tl.points
	}
	seen := map[string]bool{}
	add := func(t sweep.Task) error {
		if !seen[t.Point] {
			seen[t.Point] = true
			tl.points = append(tl.points, t.Point)
		}
		return nil
	}
	if tl.ids == nil {
		for _, t := range tl.full {
			_ = add(t)
		}
	} else {
		_ = tl.camp.Each(add)
	}
	return tl.points
}

// pointAt is the point (its position in Points) of task i. In compact
// mode a point's replications are consecutive; a full list is indexed
// once (again when precision mode added tasks).
func (tl *taskList) pointAt(i int) int {
	if tl.ids != nil {
		return i / (tl.Len() / len(tl.Points()))
	}
	if tl.pointOf == nil || tl.pointOfLen != len(tl.full) {
		pos := make(map[string]int32, len(tl.Points()))
		for k, p := range tl.Points() {
			pos[p] = int32(k)
		}
		tl.pointOf = make([]int32, len(tl.full))
		for j, t := range tl.full {
			tl.pointOf[j] = pos[t.Point]
		}
		tl.pointOfLen = len(tl.full)
	}
	return int(tl.pointOf[i])
}
