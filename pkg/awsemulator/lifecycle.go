package awsemulator

import (
	"time"

	"k8s.io/utils/clock"
)

// Instance lifecycle: an instance is "pending" from CreateFleet until Options.BootDelay
// has passed on Options.Clock, then "running"; TerminateInstances (or a spot
// interruption reaching its deadline) makes it "shutting-down", and BootDelay later it is
// "terminated" (likewise stopping -> stopped). Transitions happen whenever the state is
// observed (DescribeInstances, Instances()) and on the emulator's own tick, so a Node
// registers and events flow even when nobody asks. Every transition goes through
// setState, which records when it happened, sends the EventBridge state-change
// notification when an event queue is set, and queues Node registration or removal.

// lifecycleTick is how often the emulator advances instances by itself.
const lifecycleTick = 100 * time.Millisecond

// lifecycle is the state's bookkeeping for transitions and EventBridge.
type lifecycle struct {
	since      map[string]time.Time // instance ID -> when it entered its state
	eventQueue string               // SQS queue EventBridge delivers to ("" = none)
	eventSeq   int
	scheduled  []scheduledAction
	nodeOps    []nodeOp // registrations/removals for the lifecycle loop to carry out
}

// scheduledAction is a state change due at a time (a spot interruption's termination).
type scheduledAction struct {
	at    time.Time
	id    string
	state string
}

func (o Options) clock() clock.Clock {
	if o.Clock != nil {
		return o.Clock
	}
	return clock.RealClock{}
}

func (s *state) now() time.Time { return s.opts.clock().Now() }

func (s *state) life() *lifecycle {
	if s.lifecycle == nil {
		s.lifecycle = &lifecycle{since: map[string]time.Time{}}
	}
	return s.lifecycle
}

// setState moves an instance to st at now and emits what follows from it.
func (s *state) setState(in *Instance, st string, now time.Time) {
	if in.State == st {
		return
	}
	l := s.life()
	in.State = st
	l.since[in.ID] = now
	s.stateChangeEvent(in, now)
	switch st {
	case "running":
		in.Boots = max(in.Boots, 1)
		l.nodeOps = append(l.nodeOps, s.registration(in))
	case "terminated":
		l.nodeOps = append(l.nodeOps, nodeOp{remove: true, instanceID: in.ID, nodeName: in.PrivateDNSName})
	}
}

// advance makes every transition that is due at now.
func (s *state) advance(now time.Time) {
	l := s.life()
	delay := s.opts.BootDelay
	for _, id := range s.instanceOrder {
		in := s.instances[id]
		if now.Before(l.since[id].Add(delay)) {
			continue
		}
		switch in.State {
		case "pending":
			s.setState(in, "running", now)
		case "shutting-down":
			s.setState(in, "terminated", now)
		case "stopping":
			s.setState(in, "stopped", now)
		}
	}
	var keep []scheduledAction
	for _, a := range l.scheduled {
		if now.Before(a.at) {
			keep = append(keep, a)
			continue
		}
		in := s.instances[a.id]
		if in == nil || in.State == "terminated" || in.State == "shutting-down" {
			continue
		}
		if a.state == "shutting-down" || a.state == "terminated" {
			s.releaseAddress(in)
		}
		s.setState(in, a.state, now)
	}
	l.scheduled = keep
}

// lifecycleLoop advances instances every tick and carries out Node registrations until
// the emulator closes.
func (e *Emulator) lifecycleLoop() {
	t := e.clockTicker()
	defer t.Stop()
	for {
		select {
		case <-e.done:
			return
		case <-t.C:
		}
		e.step()
	}
}

func (e *Emulator) clockTicker() *time.Ticker { return time.NewTicker(lifecycleTick) }

// step advances instances to now and carries out the Node operations that follow.
func (e *Emulator) step() {
	var ops []nodeOp
	e.locked(func(s *state) {
		s.advance(s.now())
		l := s.life()
		ops, l.nodeOps = l.nodeOps, nil
	})
	e.applyNodeOps(ops)
}
