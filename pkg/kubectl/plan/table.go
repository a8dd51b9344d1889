package plan

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// maxPodsListed bounds the pod names a table row shows.
const maxPodsListed = 3

func money(v float64) string { return fmt.Sprintf("$%.4f/h", v) }

func podList(pods []string) string {
	if len(pods) <= maxPodsListed {
		return strings.Join(pods, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(pods[:maxPodsListed], ", "), len(pods)-maxPodsListed)
}

func writeTable(w io.Writer, p *Plan) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Plan for %s (provider %s). Nothing was written to the cluster.\n", p.Source, p.Provider)
	for _, n := range p.Notes {
		fmt.Fprintf(tw, "  note: %s\n", n)
	}
	what := "pending pods"
	if len(p.Static) > 0 {
		what = "pending pods and static NodePools"
	}
	fmt.Fprintf(tw, "\nLaunch (%d NodeClaims for %s):\n", len(p.Launches), what)
	if len(p.Launches) == 0 {
		fmt.Fprintln(tw, "  nothing to launch")
	} else {
		launchRows(tw, p.Launches)
	}
	fmt.Fprintf(tw, "\nDisrupt (%d steps):\n", len(p.Disruptions))
	if len(p.Disruptions) == 0 {
		fmt.Fprintln(tw, "  nothing to disrupt")
	}
	for _, d := range p.Disruptions {
		fmt.Fprintf(tw, "  %d. %s %s (%s, nodepool %s): %s\n", d.Step, d.Action, strings.Join(d.Nodes, ", "), d.Method,
			strings.Join(d.NodePools, ", "), d.Explanation)
		if len(d.Replacements) > 0 {
			launchRows(tw, d.Replacements)
		}
	}
	if p.StepsTruncated {
		fmt.Fprintln(tw, "  (stopped at --max-steps; more would follow)")
	}
	fmt.Fprintf(tw, "\nStay pending (%d pods):\n", len(p.Pending))
	if len(p.Pending) == 0 {
		fmt.Fprintln(tw, "  none")
	}
	for _, pp := range p.Pending {
		fmt.Fprintf(tw, "  %s\n", pp.Pod)
		for _, r := range pp.Reasons {
			fmt.Fprintf(tw, "    - %s\n", r)
		}
	}
	if len(p.Static) > 0 {
		fmt.Fprintf(tw, "\nStatic NodePools (%d):\n", len(p.Static))
		fmt.Fprintln(tw, "  NODEPOOL\tREPLICAS\tCURRENT\tLAUNCH\tREMOVE")
		for _, s := range p.Static {
			launch := fmt.Sprint(s.Launch)
			if s.AtLimit {
				launch = "0 (at limits.nodes)"
			}
			remove := "-"
			if len(s.Remove) > 0 {
				remove = strings.Join(s.Remove, ", ")
			}
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%s\t%s\n", s.NodePool, s.Replicas, s.Current, launch, remove)
		}
	}
	if len(p.Buffers) > 0 {
		fmt.Fprintf(tw, "\nCapacity buffers (%d):\n", len(p.Buffers))
		fmt.Fprintln(tw, "  BUFFER\tCHUNKS\tON EXISTING CAPACITY\tLAUNCHED\tNO PLACE")
		for _, b := range p.Buffers {
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%d\n", b.Buffer, b.Chunks, b.OnExistingCapacity, b.Launched, b.NoPlace)
		}
	}
	if len(p.Budgets) > 0 || len(p.Blocked) > 0 {
		fmt.Fprintf(tw, "\nBlocked (%d nodes a disruption method wants but leaves alone):\n", len(p.Blocked))
		for _, b := range p.Budgets {
			fmt.Fprintf(tw, "  budget: %s\n", b.Message)
		}
		fmt.Fprintln(tw, "  NODE\tNODEPOOL\tMETHOD\tCODE\tWHY")
		for _, b := range p.Blocked {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", b.Node, b.NodePool, b.Method, b.Code, b.Message)
		}
	}
	fmt.Fprintf(tw, "\nCost: %s now -> %s after the plan (%+.4f/h)", money(p.CostPerHourBefore), money(p.CostPerHourAfter),
		p.CostPerHourAfter-p.CostPerHourBefore)
	if p.Unpriced > 0 {
		fmt.Fprintf(tw, ", %d node(s) without a known price left out", p.Unpriced)
	}
	fmt.Fprintln(tw)
	if p.LowerBoundPerHour > 0 {
		fmt.Fprintf(tw, "Lower bound: no fleet running these pods from these NodePools costs less than %s (%.2fx that after the plan)\n",
			money(p.LowerBoundPerHour), p.CostPerHourAfter/p.LowerBoundPerHour)
	}
	return tw.Flush()
}

func launchRows(tw io.Writer, ls []Launch) {
	fmt.Fprintln(tw, "  NODECLAIM\tNODEPOOL\tINSTANCE TYPE\tZONE\tCAPACITY\t$/H\tREQUESTS\tPODS")
	for _, l := range ls {
		it := l.InstanceType
		if l.InstanceTypeOptions > 1 {
			it += fmt.Sprintf(" (+%d)", l.InstanceTypeOptions-1)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%.4f\t%s\t%d: %s\n", l.Name, l.NodePool, it, l.Zone, l.CapacityType, l.PricePerHour,
			l.Requests, len(l.Pods), podList(l.Pods))
	}
}
