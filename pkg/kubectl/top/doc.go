// Package top is `kubectl karpenter top`: a live view of the fleet in the
// terminal. Nodes are grouped by NodePool, each with its cpu and memory
// requests against allocatable as bars, its instance type, capacity type, age
// and price per hour, under pool totals and a cluster total.
//
// The package has three layers, so that the part worth testing is pure:
//   - frame.go and render.go: a Frame (what is on screen) and Render, which
//     turns a Frame into the lines of one screen for a given width and height.
//     No clock, no client, no terminal: golden-tested.
//   - model.go: Model, the fleet kept up to date from watch events (one
//     method per event), and Model.Frame, which snapshots it into a Frame.
//   - watch.go, term.go and top.go: informers feeding the Model (with
//     transforms that drop what top never reads), a redraw loop that coalesces
//     bursts of events into one frame, and the raw-mode terminal that quits on q.
package top
