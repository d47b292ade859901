package srd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// maxJSON bounds the AWS CLI output read by the parsers.
const maxJSON = 64 << 20

// NetworkInterface is the part of a DescribeNetworkInterfaces entry that
// matters for ENA Express.
type NetworkInterface struct {
	ID string `json:"network_interface_id"`
	// AvailabilityZone tells a same-AZ path from a cross-AZ one.
	AvailabilityZone string `json:"availability_zone,omitempty"`
	// MACAddress is how the ENI is found from the instance (FindByMAC).
	MACAddress string `json:"mac_address,omitempty"`
	// EnaSrd is the attachment's EnaSrdSpecification as the ena_srd_mode
	// the driver should report for it (Express: EnaSrdEnabled; UDP:
	// EnaSrdUdpEnabled); nil when the interface is not attached or its
	// attachment carries no EnaSrdSpecification.
	EnaSrd *ExpressMode `json:"ena_srd,omitempty"`
}

// The shapes the AWS CLI prints.
type (
	awsSpec struct {
		EnaSrdEnabled          *bool `json:"EnaSrdEnabled"`
		EnaSrdUdpSpecification *struct {
			EnaSrdUdpEnabled *bool `json:"EnaSrdUdpEnabled"`
		} `json:"EnaSrdUdpSpecification"`
	}
	awsENI struct {
		NetworkInterfaceID string `json:"NetworkInterfaceId"`
		AvailabilityZone   string `json:"AvailabilityZone"`
		MacAddress         string `json:"MacAddress"`
		Attachment         *struct {
			EnaSrdSpecification *awsSpec `json:"EnaSrdSpecification"`
		} `json:"Attachment"`
	}
	awsInstanceType struct {
		InstanceType string `json:"InstanceType"`
		NetworkInfo  *struct {
			EnaSrdSupported bool `json:"EnaSrdSupported"`
		} `json:"NetworkInfo"`
	}
)

// ParseNetworkInterfaces reads the JSON of `aws ec2
// describe-network-interfaces`: the whole response {"NetworkInterfaces":
// [...]} or the bare list that `--query NetworkInterfaces` prints. The
// EnaSrdSpecification is read from under Attachment, where EC2 puts it. A
// nil r is an error.
func ParseNetworkInterfaces(r io.Reader) ([]NetworkInterface, error) {
	if r == nil {
		return nil, errors.New("srd: ParseNetworkInterfaces: nil io.Reader r")
	}
	var raw []awsENI
	if err := decodeList(r, "NetworkInterfaces", &raw); err != nil {
		return nil, err
	}
	out := make([]NetworkInterface, 0, len(raw))
	for _, e := range raw {
		ni := NetworkInterface{ID: e.NetworkInterfaceID, AvailabilityZone: e.AvailabilityZone, MACAddress: e.MacAddress}
		if a := e.Attachment; a != nil {
			if s := a.EnaSrdSpecification; s != nil {
				var m ExpressMode
				if s.EnaSrdEnabled != nil && *s.EnaSrdEnabled {
					m |= expressEnabled
				}
				if u := s.EnaSrdUdpSpecification; u != nil && u.EnaSrdUdpEnabled != nil && *u.EnaSrdUdpEnabled {
					m |= expressUDP
				}
				ni.EnaSrd = &m
			}
		}
		out = append(out, ni)
	}
	return out, nil
}

// ParseInstanceTypes reads the JSON of `aws ec2 describe-instance-types`
// (the whole response {"InstanceTypes": [...]} or the bare list) and
// returns the part that matters for ENA Express: whether each instance
// type supports it (NetworkInfo.EnaSrdSupported), by instance type name. A
// nil r is an error.
func ParseInstanceTypes(r io.Reader) (map[string]bool, error) {
	if r == nil {
		return nil, errors.New("srd: ParseInstanceTypes: nil io.Reader r")
	}
	var raw []awsInstanceType
	if err := decodeList(r, "InstanceTypes", &raw); err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(raw))
	for _, t := range raw {
		out[t.InstanceType] = t.NetworkInfo != nil && t.NetworkInfo.EnaSrdSupported
	}
	return out, nil
}

// decodeList decodes either {key: [...]} or [...] into list.
func decodeList(r io.Reader, key string, list any) error {
	data, err := io.ReadAll(io.LimitReader(r, maxJSON+1))
	if err != nil {
		return fmt.Errorf("srd: reading %s JSON: %w", key, err)
	}
	if len(data) > maxJSON {
		return fmt.Errorf("srd: %s JSON larger than %d bytes", key, maxJSON)
	}
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '[' {
		if err := json.Unmarshal(data, list); err != nil {
			return fmt.Errorf("srd: %s JSON: %w", key, err)
		}
		return nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return fmt.Errorf("srd: %s JSON: %w", key, err)
	}
	v, ok := obj[key]
	if !ok {
		return fmt.Errorf("srd: %s JSON: %w", key, errors.New("no "+key+" key"))
	}
	if err := json.Unmarshal(v, list); err != nil {
		return fmt.Errorf("srd: %s JSON: %w", key, err)
	}
	return nil
}
