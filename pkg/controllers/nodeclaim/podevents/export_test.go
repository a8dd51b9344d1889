package podevents

import "time"

// Saw records a pod event on the node as the handlers do.
func (c *Controller) Saw(nodeName string) { c.saw(nodeName) }

// Held is the time of the node's event held back, or zero.
func (c *Controller) Held(nodeName string) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held[nodeName].at
}
