package awsemulator_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/arczonalshift"
	arctypes "github.com/aws/aws-sdk-go-v2/service/arczonalshift/types"

	"github.com/karpenter-go/karpenter/pkg/awsemulator"
)

// The ARC zonal shift API through the SDK: a shift started on the cluster's
// ARN shows in GetManagedResource (APPLIED, weight 0) and ListZonalShifts,
// can be updated and cancelled once; a second customer shift conflicts; an
// unknown resource or zone is refused.
func TestARCZonalShiftAPI(t *testing.T) {
	c := start(t)
	arc := arczonalshift.NewFromConfig(c.cfg)
	arn := c.e.Cluster().ARN

	got, err := arc.GetManagedResource(ctx, &arczonalshift.GetManagedResourceInput{ResourceIdentifier: aws.String(arn)})
	ok(t, err)
	if aws.ToString(got.Arn) != arn || len(got.ZonalShifts) != 0 || got.AppliedWeights["usw2-az1"] != 1 {
		t.Fatalf("managed resource before a shift: %+v", got)
	}
	start, err := arc.StartZonalShift(ctx, &arczonalshift.StartZonalShiftInput{
		ResourceIdentifier: aws.String(arn), AwayFrom: aws.String("usw2-az1"), ExpiresIn: aws.String("2h"), Comment: aws.String("drill"),
	})
	ok(t, err)
	if start.Status != arctypes.ZonalShiftStatusActive || aws.ToString(start.AwayFrom) != "usw2-az1" ||
		aws.ToTime(start.ExpiryTime).Sub(aws.ToTime(start.StartTime)) != 2*time.Hour {
		t.Fatalf("started %+v", start)
	}
	_, err = arc.StartZonalShift(ctx, &arczonalshift.StartZonalShiftInput{
		ResourceIdentifier: aws.String(arn), AwayFrom: aws.String("usw2-az2"), ExpiresIn: aws.String("30m"), Comment: aws.String("again"),
	})
	expectError(t, err, "ConflictException", 409)

	got, err = arc.GetManagedResource(ctx, &arczonalshift.GetManagedResourceInput{ResourceIdentifier: aws.String(arn)})
	ok(t, err)
	if len(got.ZonalShifts) != 1 || got.ZonalShifts[0].AppliedStatus != arctypes.AppliedStatusApplied ||
		aws.ToString(got.ZonalShifts[0].ZonalShiftId) != aws.ToString(start.ZonalShiftId) || got.AppliedWeights["usw2-az1"] != 0 ||
		got.ZonalShifts[0].ShiftType != arctypes.ShiftTypeZonalShift || aws.ToTime(got.ZonalShifts[0].ExpiryTime).IsZero() {
		t.Fatalf("managed resource during the shift: %+v", got.ZonalShifts)
	}
	upd, err := arc.UpdateZonalShift(ctx, &arczonalshift.UpdateZonalShiftInput{ZonalShiftId: start.ZonalShiftId, ExpiresIn: aws.String("10m")})
	ok(t, err)
	if d := time.Until(aws.ToTime(upd.ExpiryTime)); d > 11*time.Minute || d < 9*time.Minute {
		t.Fatalf("updated expiry in %s, want about 10m", d)
	}
	list, err := arc.ListZonalShifts(ctx, &arczonalshift.ListZonalShiftsInput{Status: arctypes.ZonalShiftStatusActive})
	ok(t, err)
	if len(list.Items) != 1 || aws.ToString(list.Items[0].ResourceIdentifier) != arn {
		t.Fatalf("active shifts %+v", list.Items)
	}
	cancelled, err := arc.CancelZonalShift(ctx, &arczonalshift.CancelZonalShiftInput{ZonalShiftId: start.ZonalShiftId})
	ok(t, err)
	if cancelled.Status != arctypes.ZonalShiftStatusCanceled {
		t.Fatalf("cancelled %+v", cancelled)
	}
	_, err = arc.CancelZonalShift(ctx, &arczonalshift.CancelZonalShiftInput{ZonalShiftId: start.ZonalShiftId})
	expectError(t, err, "ConflictException", 409)
	got, err = arc.GetManagedResource(ctx, &arczonalshift.GetManagedResourceInput{ResourceIdentifier: aws.String(arn)})
	ok(t, err)
	if len(got.ZonalShifts) != 0 {
		t.Fatalf("shifts after cancelling: %+v", got.ZonalShifts)
	}

	_, err = arc.GetManagedResource(ctx, &arczonalshift.GetManagedResourceInput{ResourceIdentifier: aws.String("arn:aws:eks:us-west-2:123456789012:cluster/other")})
	expectError(t, err, "ResourceNotFoundException", 404)
	_, err = arc.StartZonalShift(ctx, &arczonalshift.StartZonalShiftInput{
		ResourceIdentifier: aws.String(arn), AwayFrom: aws.String("use1-az9"), ExpiresIn: aws.String("1h"), Comment: aws.String("x"),
	})
	expectError(t, err, "ValidationException", 400)
	c.e.SetZonalShiftRegistered(false)
	_, err = arc.GetManagedResource(ctx, &arczonalshift.GetManagedResourceInput{ResourceIdentifier: aws.String(arn)})
	expectError(t, err, "ResourceNotFoundException", 404)
}

// The control hook starts a shift (or an autoshift) over HTTP and cancels it;
// GetManagedResource lists an autoshift in autoshifts too, and an expired
// shift is gone.
func TestZonalShiftControlHook(t *testing.T) {
	c := start(t)
	arc := arczonalshift.NewFromConfig(c.cfg)
	arn := c.e.Cluster().ARN
	post := func(body string) map[string]string {
		t.Helper()
		resp, err := http.Post(c.e.Endpoint()+"/_emulator/zonal-shifts", "application/json", bytes.NewBufferString(body))
		ok(t, err)
		defer resp.Body.Close()
		var out map[string]string
		ok(t, json.NewDecoder(resp.Body).Decode(&out))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("POST %s: %d %v", body, resp.StatusCode, out)
		}
		return out
	}
	auto := post(`{"awayFrom":"us-west-2b","autoshift":true}`)
	if auto["awayFrom"] != "usw2-az2" || auto["shiftType"] != awsemulator.ShiftTypeZonalAutoshift {
		t.Fatalf("autoshift %v", auto)
	}
	got, err := arc.GetManagedResource(ctx, &arczonalshift.GetManagedResourceInput{ResourceIdentifier: aws.String(arn)})
	ok(t, err)
	if len(got.Autoshifts) != 1 || aws.ToString(got.Autoshifts[0].AwayFrom) != "usw2-az2" || len(got.ZonalShifts) != 1 ||
		got.ZonalShifts[0].ShiftType != arctypes.ShiftTypeZonalAutoshift {
		t.Fatalf("autoshift in the managed resource: %+v %+v", got.Autoshifts, got.ZonalShifts)
	}
	// A customer shift takes precedence over the autoshift.
	shift := post(`{"awayFrom":"usw2-az3","expiresIn":"1s"}`)
	got, err = arc.GetManagedResource(ctx, &arczonalshift.GetManagedResourceInput{ResourceIdentifier: aws.String(arn)})
	ok(t, err)
	for _, z := range got.ZonalShifts {
		if applied := z.AppliedStatus == arctypes.AppliedStatusApplied; applied != (aws.ToString(z.ZonalShiftId) == shift["zonalShiftId"]) {
			t.Errorf("shift %s applied %v", aws.ToString(z.ZonalShiftId), z.AppliedStatus)
		}
	}
	req, err := http.NewRequest(http.MethodDelete, c.e.Endpoint()+"/_emulator/zonal-shifts/"+auto["zonalShiftId"], nil)
	ok(t, err)
	resp, err := http.DefaultClient.Do(req)
	ok(t, err)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err = arc.GetManagedResource(ctx, &arczonalshift.GetManagedResourceInput{ResourceIdentifier: aws.String(arn)})
		ok(t, err)
		if len(got.ZonalShifts) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("shifts still listed after cancel and expiry: %+v", got.ZonalShifts)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var statuses []string
	for _, z := range c.e.ZonalShifts() {
		statuses = append(statuses, z.Status)
	}
	if len(statuses) != 2 || statuses[0] != awsemulator.ZonalShiftCanceled || statuses[1] != awsemulator.ZonalShiftExpired {
		t.Fatalf("statuses %v, want CANCELED then EXPIRED", statuses)
	}
}
