package awsemulator

import (
	"encoding/json"
	"time"
)

// ssmOps is the SSM operation table (AWS JSON 1.1, X-Amz-Target AmazonSSM.<Op>).
func ssmOps() map[string]handler {
	return map[string]handler{
		"GetParameter":  ssmGetParameter,
		"GetParameters": ssmGetParameters,
	}
}

type ssmParameter struct {
	Name             string
	Type             string
	Value            string
	Version          int64
	LastModifiedDate float64 // epoch seconds, as the JSON protocols send timestamps
	ARN              string
	DataType         string
}

func decodeJSON(c *call, into any) *apiError {
	if len(c.body) == 0 {
		return nil
	}
	if err := json.Unmarshal(c.body, into); err != nil {
		return errorf(400, "SerializationException", "Could not decode the request body: %v", err)
	}
	return nil
}

func epoch(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }

func (s *state) ssmParameter(name string) (ssmParameter, bool) {
	p := s.parameters[name]
	if p == nil {
		return ssmParameter{}, false
	}
	dataType := "text"
	if len(p.Value) > 4 && p.Value[:4] == "ami-" {
		dataType = "aws:ec2:image"
	}
	return ssmParameter{
		Name: p.Name, Type: "String", Value: p.Value, Version: p.Version, LastModifiedDate: epoch(p.LastModified),
		ARN: "arn:aws:ssm:" + s.opts.Region + "::parameter" + p.Name, DataType: dataType,
	}, true
}

func ssmGetParameter(c *call) (any, error) {
	var in struct {
		Name           string
		WithDecryption bool
	}
	if err := decodeJSON(c, &in); err != nil {
		return nil, err
	}
	if in.Name == "" {
		return nil, errorf(400, "ValidationException", "1 validation error detected: Value null at 'name' failed to satisfy constraint: Member must not be null")
	}
	var out ssmParameter
	var ok bool
	c.e.locked(func(s *state) { out, ok = s.ssmParameter(in.Name) })
	if !ok {
		return nil, errorf(400, "ParameterNotFound", "Parameter %s not found.", in.Name)
	}
	return map[string]any{"Parameter": out}, nil
}

func ssmGetParameters(c *call) (any, error) {
	var in struct {
		Names          []string
		WithDecryption bool
	}
	if err := decodeJSON(c, &in); err != nil {
		return nil, err
	}
	if len(in.Names) == 0 || len(in.Names) > 10 {
		return nil, errorf(400, "ValidationException", "1 validation error detected: Value at 'names' failed to satisfy constraint: Member must have length less than or equal to 10 and greater than or equal to 1")
	}
	params, invalid := []ssmParameter{}, []string{}
	c.e.locked(func(s *state) {
		for _, n := range in.Names {
			if p, ok := s.ssmParameter(n); ok {
				params = append(params, p)
			} else {
				invalid = append(invalid, n)
			}
		}
	})
	return map[string]any{"Parameters": params, "InvalidParameters": invalid}, nil
}
