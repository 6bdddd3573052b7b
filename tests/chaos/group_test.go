package main

import (
	"slices"
	"testing"
)

func TestShardDealsWholeRowsEvenlyInPlanOrder(t *testing.T) {
	var plan []*row
	for i, n := range []int{3, 3, 2, 3, 3, 2, 2, 1} {
		plan = append(plan, &row{config: "watch", rounds: n, fault: &fault{Name: string(rune('a' + i))}})
	}
	cfgs, plans := shard(groupConfig{Name: "watch", Shards: 2}, plan)
	if len(cfgs) != 2 || cfgs[0].Name != "watch-1" || cfgs[1].Name != "watch-2" {
		t.Fatalf("groups %+v, want watch-1 and watch-2", cfgs)
	}
	var dealt []*row
	for k, p := range plans {
		rounds := 0
		for _, r := range p {
			rounds += r.rounds
		}
		if rounds < 9 || rounds > 10 {
			t.Errorf("group %d has %d of the 19 rounds", k, rounds)
		}
		if !slices.IsSortedFunc(p, func(a, b *row) int { return slices.Index(plan, a) - slices.Index(plan, b) }) {
			t.Errorf("group %d runs its rows out of the plan's order", k)
		}
		dealt = append(dealt, p...)
	}
	if len(dealt) != len(plan) {
		t.Errorf("%d rows dealt, want each of the %d once", len(dealt), len(plan))
	}
	for _, r := range plan {
		if !slices.Contains(dealt, r) {
			t.Errorf("row %s was not dealt", r.fault.Name)
		}
	}
}

func TestShardLeavesAnUnshardedConfigOneGroup(t *testing.T) {
	plan := []*row{{rounds: 2}, {rounds: 1}}
	cfgs, plans := shard(groupConfig{Name: "mixed"}, plan)
	if len(cfgs) != 1 || cfgs[0].Name != "mixed" || len(plans[0]) != 2 {
		t.Errorf("got %d groups (%+v), want mixed alone with both rows", len(cfgs), cfgs)
	}
}
