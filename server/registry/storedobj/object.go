package storedobj

import (
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/resource"
)

// ServedJSON is a stored object as res serves it: the stored bytes themselves, unless the
// object must be converted from the storage version.
func ServedJSON(res *resource.Resource, value []byte) ([]byte, error) {
	if !res.NeedsConversion() {
		return value, nil
	}
	obj, err := DecodeServed(res, value)
	if err != nil {
		return nil, err
	}
	return json.Marshal(obj.Object)
}

// DecodeServed decodes a stored object into the version res serves.
func DecodeServed(res *resource.Resource, value []byte) (*unstructured.Unstructured, error) {
	obj, err := DecodeStored(value)
	if err != nil {
		return nil, err
	}
	if !res.NeedsConversion() {
		return obj, nil
	}
	rv := obj.GetResourceVersion()
	served, err := res.ReadStored(obj)
	var conversion *resource.ConversionError
	if errors.As(err, &conversion) {
		return nil, &NotDecodableError{Revision: rv, Err: conversion}
	}
	return served, err
}

// DecodeStored decodes an object as stored; stored objects are always valid JSON objects.
func DecodeStored(value []byte) (*unstructured.Unstructured, error) {
	var content map[string]interface{}
	if err := utiljson.Unmarshal(value, &content); err != nil {
		return nil, fmt.Errorf("decoding stored object: %w", err)
	}
	return &unstructured.Unstructured{Object: content}, nil
}

// UnmarshalStored decodes (part of) a stored object; failing is an internal error, since the
// server only stores what it encoded.
func UnmarshalStored(value []byte, v any) error {
	if err := json.Unmarshal(value, v); err != nil {
		return apierrors.NewInternalError(fmt.Errorf("decoding stored object: %w", err))
	}
	return nil
}

// MetadataOnly decodes only the metadata of a stored object (with UnmarshalStored), for readers
// that need nothing else.
type MetadataOnly struct {
	Metadata metav1.ObjectMeta `json:"metadata"`
}

// EtcdKey is where kube-apiserver would keep the object in etcd, which its storage errors name:
// under /registry, by resource (custom resources and CRDs by group and resource too).
func EtcdKey(res *resource.Resource, namespace, name string) string {
	prefix := "/registry/" + res.Name
	if res.CRDName != "" || res.Group == builtin.APIExtensionsGroup {
		prefix = "/registry/" + res.Group + "/" + res.Name
	}
	if namespace != "" {
		return prefix + "/" + namespace + "/" + name
	}
	return prefix + "/" + name
}
