package orchestration

// Event reasons recorded on the candidate NodeClaims and their Nodes.
const (
	// EventDisruptionLaunching: the replacements were created (upstream's name).
	EventDisruptionLaunching = "DisruptionLaunching"
	// EventDisruptionWaitingReadiness: the candidates wait for their
	// replacements to initialize (upstream's name).
	EventDisruptionWaitingReadiness = "DisruptionWaitingReadiness"
	// EventDisruptionTerminating: the candidate's deletion was requested
	// (upstream's name).
	EventDisruptionTerminating = "DisruptionTerminating"
	// EventDisruptionFailed (Warning): the command was rolled back and says
	// why. Upstream only logs this; the event is our addition, so that
	// `kubectl describe node` explains why a node was cordoned and then was not.
	EventDisruptionFailed = "DisruptionFailed"
)
