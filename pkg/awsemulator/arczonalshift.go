package awsemulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ARC zonal shift (service "arc-zonal-shift", REST-JSON as the SDK's
// arczonalshift client speaks it). The one managed resource is the EKS
// cluster, by its ARN, registered for zonal shift unless
// SetZonalShiftRegistered(false). Shifts are started and cancelled through
// the API (StartZonalShift, CancelZonalShift, UpdateZonalShift) or the
// control hooks (StartZonalShift/StartAutoshift/CancelZonalShift here,
// POST/DELETE /_emulator/zonal-shifts); GetManagedResource, ListZonalShifts,
// ListManagedResources and ListAutoshifts read them. A shift is ACTIVE until
// cancelled or past its expiry (EXPIRED); of a resource's active shifts the
// one in effect (appliedStatus APPLIED) is, as ARC's precedence says, a
// customer zonal shift before an autoshift before a practice run, the latest
// started first among equals.

// Zonal shift types and statuses (ARC's values).
const (
	ShiftTypeZonalShift     = "ZONAL_SHIFT"
	ShiftTypeZonalAutoshift = "ZONAL_AUTOSHIFT"
	ShiftTypePracticeRun    = "PRACTICE_RUN"

	ZonalShiftActive   = "ACTIVE"
	ZonalShiftExpired  = "EXPIRED"
	ZonalShiftCanceled = "CANCELED"
)

// ZonalShift is one shift of traffic away from a zone.
type ZonalShift struct {
	ID                 string
	ResourceIdentifier string
	AwayFrom           string // the zone id, e.g. usw2-az1
	Comment            string
	ShiftType          string // ShiftType*
	StartTime          time.Time
	ExpiryTime         time.Time
	// Status is ACTIVE, EXPIRED (past ExpiryTime) or CANCELED.
	Status string
}

// arcState is the zonal shift part of the emulator's state.
type arcState struct {
	shifts       []*ZonalShift // start order
	unregistered bool          // the cluster is not registered for zonal shift
}

func arcZonalShiftOps() map[string]handler {
	return map[string]handler{
		"GetManagedResource":   arcGetManagedResource,
		"ListManagedResources": arcListManagedResources,
		"StartZonalShift":      arcStartZonalShift,
		"CancelZonalShift":     arcCancelZonalShift,
		"UpdateZonalShift":     arcUpdateZonalShift,
		"ListZonalShifts":      arcListZonalShifts,
		"ListAutoshifts":       arcListAutoshifts,
	}
}

// isARCPath: the ARC zonal shift API's resource paths.
func isARCPath(p string) bool {
	for _, prefix := range []string{"/managedresources", "/zonalshifts", "/autoshifts"} {
		if p == prefix || strings.HasPrefix(p, prefix+"/") {
			return true
		}
	}
	return false
}

// routeARC maps method + path to an action and its path argument (the
// resource identifier or zonal shift id, unescaped: an ARN arrives with its
// ':' and '/' percent-encoded).
func (c *call) routeARC() *apiError {
	parts := strings.Split(strings.Trim(c.r.URL.EscapedPath(), "/"), "/")
	if len(parts) == 2 {
		arg, err := url.PathUnescape(parts[1])
		if err != nil {
			c.action = "Unknown"
			return errorf(400, "ValidationException", "invalid path parameter %q", parts[1])
		}
		c.pathArgs = []string{arg}
	}
	m := c.r.Method
	switch {
	case parts[0] == "managedresources" && len(parts) == 1 && m == http.MethodGet:
		c.action = "ListManagedResources"
	case parts[0] == "managedresources" && len(parts) == 2 && m == http.MethodGet:
		c.action = "GetManagedResource"
	case parts[0] == "zonalshifts" && len(parts) == 1 && m == http.MethodGet:
		c.action = "ListZonalShifts"
	case parts[0] == "zonalshifts" && len(parts) == 1 && m == http.MethodPost:
		c.action = "StartZonalShift"
	case parts[0] == "zonalshifts" && len(parts) == 2 && m == http.MethodDelete:
		c.action = "CancelZonalShift"
	case parts[0] == "zonalshifts" && len(parts) == 2 && m == http.MethodPatch:
		c.action = "UpdateZonalShift"
	case parts[0] == "autoshifts" && len(parts) == 1 && m == http.MethodGet:
		c.action = "ListAutoshifts"
	default:
		c.action = "Unknown"
		return errorf(404, "UnknownOperationException", "no ARC zonal shift operation at %s %s", m, c.r.URL.Path)
	}
	return nil
}

// refresh expires the shifts past their expiry.
func (s *state) arcRefresh() {
	now := s.now()
	for _, z := range s.arc.shifts {
		if z.Status == ZonalShiftActive && !now.Before(z.ExpiryTime) {
			z.Status = ZonalShiftExpired
		}
	}
}

// managedResource is the resource id names, nil when ARC does not know it.
func (s *state) managedResource(id string) *Cluster {
	if s.arc.unregistered || s.cluster == nil || id != s.cluster.ARN {
		return nil
	}
	return s.cluster
}

func shiftPrecedence(t string) int {
	switch t {
	case ShiftTypeZonalShift:
		return 3
	case ShiftTypeZonalAutoshift:
		return 2
	case ShiftTypeFISExperiment:
		return 1
	}
	return 0
}

// ShiftTypeFISExperiment is a shift started by an AWS FIS experiment.
const ShiftTypeFISExperiment = "FIS_EXPERIMENT"

// activeShifts are the resource's active shifts, the one in effect first.
func (s *state) activeShifts(resource string) []*ZonalShift {
	var out []*ZonalShift
	for _, z := range s.arc.shifts {
		if z.ResourceIdentifier == resource && z.Status == ZonalShiftActive {
			out = append(out, z)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if pa, pb := shiftPrecedence(a.ShiftType), shiftPrecedence(b.ShiftType); pa != pb {
			return pa > pb
		}
		return a.StartTime.After(b.StartTime)
	})
	return out
}

func (s *state) managedResourceJSON(cl *Cluster) map[string]any {
	active := s.activeShifts(cl.ARN)
	weights := map[string]float64{}
	for _, z := range s.zones {
		weights[z.id] = 1
	}
	shifts := []map[string]any{}
	autoshifts := []map[string]any{}
	for i, z := range active {
		applied := "NOT_APPLIED"
		if i == 0 {
			applied = "APPLIED"
			weights[z.AwayFrom] = 0
		}
		shifts = append(shifts, map[string]any{
			"appliedStatus": applied, "zonalShiftId": z.ID, "resourceIdentifier": z.ResourceIdentifier,
			"awayFrom": z.AwayFrom, "expiryTime": epoch(z.ExpiryTime), "startTime": epoch(z.StartTime),
			"comment": z.Comment, "shiftType": z.ShiftType,
		})
		if z.ShiftType == ShiftTypeZonalAutoshift {
			autoshifts = append(autoshifts, map[string]any{"appliedStatus": applied, "awayFrom": z.AwayFrom, "startTime": epoch(z.StartTime)})
		}
	}
	zones := []string{}
	for _, z := range s.zones {
		zones = append(zones, z.name)
	}
	return map[string]any{
		"arn": cl.ARN, "name": cl.Name, "appliedWeights": weights, "availabilityZones": zones,
		"zonalShifts": shifts, "autoshifts": autoshifts, "zonalAutoshiftStatus": "DISABLED",
	}
}

func arcGetManagedResource(c *call) (any, error) {
	id := c.pathArgs[0]
	var out map[string]any
	c.e.locked(func(s *state) {
		s.arcRefresh()
		if cl := s.managedResource(id); cl != nil {
			out = s.managedResourceJSON(cl)
		}
	})
	if out == nil {
		return nil, errorf(404, "ResourceNotFoundException", "The resource %s was not found or is not registered for zonal shift.", id)
	}
	return out, nil
}

func arcListManagedResources(c *call) (any, error) {
	items := []map[string]any{}
	c.e.locked(func(s *state) {
		s.arcRefresh()
		if s.cluster != nil && !s.arc.unregistered {
			items = append(items, s.managedResourceJSON(s.cluster))
		}
	})
	return map[string]any{"items": items}, nil
}

var expiresInPattern = regexp.MustCompile(`^([1-9][0-9]*)(m|h)$`)

// parseExpiresIn reads ARC's expiresIn ("30m", "2h": 1 minute to 72 hours).
func parseExpiresIn(v string) (time.Duration, *apiError) {
	m := expiresInPattern.FindStringSubmatch(v)
	if m == nil {
		return 0, errorf(400, "ValidationException", "expiresIn %q must be a number of minutes or hours, e.g. 30m or 2h", v)
	}
	n, _ := strconv.Atoi(m[1])
	d := time.Duration(n) * time.Minute
	if m[2] == "h" {
		d = time.Duration(n) * time.Hour
	}
	if d > 72*time.Hour {
		return 0, errorf(400, "ValidationException", "expiresIn %q is longer than 72 hours", v)
	}
	return d, nil
}

func (s *state) zoneIDKnown(id string) bool {
	for _, z := range s.zones {
		if z.id == id {
			return true
		}
	}
	return false
}

// startShift records a shift of resource away from zone (an id, or a name
// of one of the region's zones); customer shifts of one resource cannot
// overlap, as ARC's.
func (s *state) startShift(resource, awayFrom, comment, shiftType string, expiresIn time.Duration) (*ZonalShift, *apiError) {
	s.arcRefresh()
	if s.managedResource(resource) == nil {
		return nil, errorf(404, "ResourceNotFoundException", "The resource %s was not found or is not registered for zonal shift.", resource)
	}
	for _, z := range s.zones {
		if z.name == awayFrom {
			awayFrom = z.id
		}
	}
	if !s.zoneIDKnown(awayFrom) {
		return nil, errorf(400, "ValidationException", "awayFrom %q is not an Availability Zone id of %s", awayFrom, s.opts.Region)
	}
	for _, z := range s.activeShifts(resource) {
		if z.ShiftType == shiftType && shiftType == ShiftTypeZonalShift {
			return nil, errorf(409, "ConflictException", "A zonal shift (%s) is already active for resource %s.", z.ID, resource)
		}
	}
	now := s.now().UTC()
	z := &ZonalShift{
		ID: uuidLike("zonal-shift", s.nextSeq()), ResourceIdentifier: resource, AwayFrom: awayFrom, Comment: comment,
		ShiftType: shiftType, StartTime: now, ExpiryTime: now.Add(expiresIn), Status: ZonalShiftActive,
	}
	s.arc.shifts = append(s.arc.shifts, z)
	return z, nil
}

func zonalShiftJSON(z *ZonalShift) map[string]any {
	return map[string]any{
		"zonalShiftId": z.ID, "resourceIdentifier": z.ResourceIdentifier, "awayFrom": z.AwayFrom,
		"expiryTime": epoch(z.ExpiryTime), "startTime": epoch(z.StartTime), "status": z.Status, "comment": z.Comment,
	}
}

func arcStartZonalShift(c *call) (any, error) {
	var in struct {
		AwayFrom           string `json:"awayFrom"`
		Comment            string `json:"comment"`
		ExpiresIn          string `json:"expiresIn"`
		ResourceIdentifier string `json:"resourceIdentifier"`
	}
	if err := json.Unmarshal(c.body, &in); err != nil {
		return nil, errorf(400, "ValidationException", "invalid request body: %v", err)
	}
	d, apiErr := parseExpiresIn(in.ExpiresIn)
	if apiErr != nil {
		return nil, apiErr
	}
	var out map[string]any
	c.e.locked(func(s *state) {
		var z *ZonalShift
		if z, apiErr = s.startShift(in.ResourceIdentifier, in.AwayFrom, in.Comment, ShiftTypeZonalShift, d); apiErr == nil {
			out = zonalShiftJSON(z)
		}
	})
	if apiErr != nil {
		return nil, apiErr
	}
	return created{out}, nil
}

// created is a REST-JSON answer with HTTP status 201 (StartZonalShift's).
type created struct{ body any }

func (s *state) findShift(id string) *ZonalShift {
	for _, z := range s.arc.shifts {
		if z.ID == id {
			return z
		}
	}
	return nil
}

func (s *state) cancelShift(id string) (*ZonalShift, *apiError) {
	s.arcRefresh()
	z := s.findShift(id)
	if z == nil {
		return nil, errorf(404, "ResourceNotFoundException", "The zonal shift %s was not found.", id)
	}
	if z.Status != ZonalShiftActive {
		return nil, errorf(409, "ConflictException", "The zonal shift %s is %s, not ACTIVE.", id, z.Status)
	}
	z.Status = ZonalShiftCanceled
	return z, nil
}

func arcCancelZonalShift(c *call) (any, error) {
	var out map[string]any
	var apiErr *apiError
	c.e.locked(func(s *state) {
		var z *ZonalShift
		if z, apiErr = s.cancelShift(c.pathArgs[0]); apiErr == nil {
			out = zonalShiftJSON(z)
		}
	})
	if apiErr != nil {
		return nil, apiErr
	}
	return out, nil
}

func arcUpdateZonalShift(c *call) (any, error) {
	var in struct {
		Comment   *string `json:"comment"`
		ExpiresIn *string `json:"expiresIn"`
	}
	if err := json.Unmarshal(c.body, &in); err != nil {
		return nil, errorf(400, "ValidationException", "invalid request body: %v", err)
	}
	var d time.Duration
	var apiErr *apiError
	if in.ExpiresIn != nil {
		if d, apiErr = parseExpiresIn(*in.ExpiresIn); apiErr != nil {
			return nil, apiErr
		}
	}
	var out map[string]any
	c.e.locked(func(s *state) {
		s.arcRefresh()
		z := s.findShift(c.pathArgs[0])
		switch {
		case z == nil:
			apiErr = errorf(404, "ResourceNotFoundException", "The zonal shift %s was not found.", c.pathArgs[0])
		case z.Status != ZonalShiftActive:
			apiErr = errorf(409, "ConflictException", "The zonal shift %s is %s, not ACTIVE.", z.ID, z.Status)
		default:
			if in.Comment != nil {
				z.Comment = *in.Comment
			}
			if in.ExpiresIn != nil {
				z.ExpiryTime = s.now().UTC().Add(d)
			}
			out = zonalShiftJSON(z)
		}
	})
	if apiErr != nil {
		return nil, apiErr
	}
	return out, nil
}

// ListZonalShifts: every shift (practice runs and autoshifts included), or
// those of the status and resource the query names.
func arcListZonalShifts(c *call) (any, error) {
	q := c.r.URL.Query()
	items := []map[string]any{}
	c.e.locked(func(s *state) {
		s.arcRefresh()
		for _, z := range s.arc.shifts {
			if st := q.Get("status"); st != "" && z.Status != st {
				continue
			}
			if r := q.Get("resourceIdentifier"); r != "" && z.ResourceIdentifier != r {
				continue
			}
			item := zonalShiftJSON(z)
			item["shiftType"] = z.ShiftType
			items = append(items, item)
		}
	})
	return map[string]any{"items": items}, nil
}

func arcListAutoshifts(c *call) (any, error) {
	q := c.r.URL.Query()
	items := []map[string]any{}
	c.e.locked(func(s *state) {
		s.arcRefresh()
		for _, z := range s.arc.shifts {
			if z.ShiftType != ShiftTypeZonalAutoshift {
				continue
			}
			status := "ACTIVE"
			if z.Status != ZonalShiftActive {
				status = "COMPLETED"
			}
			if st := q.Get("status"); st != "" && st != status {
				continue
			}
			item := map[string]any{"awayFrom": z.AwayFrom, "startTime": epoch(z.StartTime), "status": status}
			if status == "COMPLETED" {
				item["endTime"] = epoch(z.ExpiryTime)
			}
			items = append(items, item)
		}
	})
	return map[string]any{"items": items}, nil
}

// --- Go hooks ---

// StartZonalShift starts a customer zonal shift of the cluster away from
// zone (a zone id such as usw2-az1, or a zone name) for expiresIn, as
// StartZonalShift would, and returns it.
func (e *Emulator) StartZonalShift(zone string, expiresIn time.Duration) (ZonalShift, error) {
	return e.startShiftHook(zone, "started by the emulator's control hook", ShiftTypeZonalShift, expiresIn)
}

// StartAutoshift starts an autoshift of the cluster away from zone, as AWS
// does on its own when it sees the zone impaired; it lasts until cancelled
// (CancelZonalShift) or expiresIn passes.
func (e *Emulator) StartAutoshift(zone string, expiresIn time.Duration) (ZonalShift, error) {
	return e.startShiftHook(zone, "autoshift", ShiftTypeZonalAutoshift, expiresIn)
}

func (e *Emulator) startShiftHook(zone, comment, shiftType string, expiresIn time.Duration) (ZonalShift, error) {
	if expiresIn <= 0 {
		return ZonalShift{}, fmt.Errorf("a zonal shift needs a positive expiry")
	}
	var out ZonalShift
	var apiErr *apiError
	e.locked(func(s *state) {
		var z *ZonalShift
		if z, apiErr = s.startShift(s.cluster.ARN, zone, comment, shiftType, expiresIn); apiErr == nil {
			out = *z
		}
	})
	if apiErr != nil {
		return ZonalShift{}, apiErr
	}
	return out, nil
}

// CancelZonalShift ends the shift with id (of any type) now.
func (e *Emulator) CancelZonalShift(id string) error {
	var apiErr *apiError
	e.locked(func(s *state) { _, apiErr = s.cancelShift(id) })
	if apiErr != nil {
		return apiErr
	}
	return nil
}

// ZonalShifts returns every shift, in start order, statuses up to date.
func (e *Emulator) ZonalShifts() []ZonalShift {
	var out []ZonalShift
	e.locked(func(s *state) {
		s.arcRefresh()
		for _, z := range s.arc.shifts {
			out = append(out, *z)
		}
	})
	return out
}

// SetZonalShiftRegistered says whether the cluster is registered for zonal
// shift (default true); unregistered, GetManagedResource of it answers
// ResourceNotFoundException.
func (e *Emulator) SetZonalShiftRegistered(registered bool) {
	e.locked(func(s *state) { s.arc.unregistered = !registered })
}

// controlZonalShift serves POST /_emulator/zonal-shifts
// {"awayFrom","expiresIn","autoshift"} and DELETE /_emulator/zonal-shifts/<id>.
func (e *Emulator) controlZonalShift(r *http.Request) (int, any, error) {
	if r.Method == http.MethodDelete {
		id := strings.TrimPrefix(r.URL.Path, "/_emulator/zonal-shifts/")
		if err := e.CancelZonalShift(id); err != nil {
			if ae, ok := err.(*apiError); ok && ae.Status == 404 {
				return http.StatusNotFound, nil, err
			}
			return http.StatusConflict, nil, err
		}
		return http.StatusOK, map[string]string{"status": "cancelled"}, nil
	}
	var in struct {
		AwayFrom  string
		ExpiresIn string
		Autoshift bool
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		return http.StatusBadRequest, nil, err
	}
	d := time.Hour
	if in.ExpiresIn != "" {
		var err error
		if d, err = time.ParseDuration(in.ExpiresIn); err != nil {
			return http.StatusBadRequest, nil, err
		}
	}
	start := e.StartZonalShift
	if in.Autoshift {
		start = e.StartAutoshift
	}
	z, err := start(in.AwayFrom, d)
	if err != nil {
		return http.StatusBadRequest, nil, err
	}
	return http.StatusOK, map[string]string{"zonalShiftId": z.ID, "awayFrom": z.AwayFrom, "shiftType": z.ShiftType}, nil
}
