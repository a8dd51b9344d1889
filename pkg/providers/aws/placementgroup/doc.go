// Package placementgroup resolves an EC2NodeClass's placementGroupSelector
// (a group's name or its id) to one EC2 placement group through
// DescribePlacementGroups (GroupNames or GroupIds).
//
// A group EC2 does not know (InvalidPlacementGroup.Unknown,
// InvalidPlacementGroupId.NotFound or .Malformed) and a group that is not
// available (pending, deleting, deleted) are answers, not errors: the
// Resolution says which, for the controller's condition and the launch's
// refusal. Answers are cached for a minute, so the controller, the instance
// type offerings, the launches and the drift check of one class share a call.
package placementgroup
