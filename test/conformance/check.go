package main

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// Small comparison helpers: each returns an error that says what was expected and what came back.

func expectEqual[T any](what string, got, want T) error {
	if !reflect.DeepEqual(got, want) {
		return fmt.Errorf("%s: got %#v, want %#v", what, got, want)
	}
	return nil
}

func expectErrorIs(what string, err, target error) error {
	if err == nil {
		return fmt.Errorf("%s: got no error, want %q", what, target)
	}
	if !errors.Is(err, target) {
		return fmt.Errorf("%s: got error %q, want one that is %q", what, err, target)
	}
	return nil
}

func expectErrorContaining(what string, err error, parts ...string) error {
	if err == nil {
		return fmt.Errorf("%s: got no error, want one containing %q", what, parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			return fmt.Errorf("%s: got error %q, want one containing %q", what, err, p)
		}
	}
	return nil
}

func expectNoError(what string, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// first returns the first non-nil error, so a step can list its checks in order.
func first(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
