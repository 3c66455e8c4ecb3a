package builtin

import (
	"fmt"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The validation of flowcontrol.apiserver.k8s.io objects is kube's in its essentials, with its
// messages: what the priority-and-fairness filter needs to read them. Kube's finer rules (on
// subjects and rules) are not repeated.

func validateFlowSchema(fs, _ *flowcontrolv1.FlowSchema) field.ErrorList {
	spec, path := &fs.Spec, field.NewPath("spec")
	var errs field.ErrorList
	if spec.MatchingPrecedence <= 0 || spec.MatchingPrecedence > 10000 {
		errs = append(errs, field.Invalid(path.Child("matchingPrecedence"), spec.MatchingPrecedence, "must be between 1 and 10000 inclusively"))
	}
	if spec.PriorityLevelConfiguration.Name == "" {
		errs = append(errs, field.Required(path.Child("priorityLevelConfiguration").Child("name"), "must reference a priority level"))
	}
	if d := spec.DistinguisherMethod; d != nil && d.Type != flowcontrolv1.FlowDistinguisherMethodByUserType && d.Type != flowcontrolv1.FlowDistinguisherMethodByNamespaceType {
		errs = append(errs, field.NotSupported(path.Child("distinguisherMethod").Child("type"), d.Type,
			[]string{string(flowcontrolv1.FlowDistinguisherMethodByNamespaceType), string(flowcontrolv1.FlowDistinguisherMethodByUserType)}))
	}
	return errs
}

func validatePriorityLevel(pl, _ *flowcontrolv1.PriorityLevelConfiguration) field.ErrorList {
	spec, path := &pl.Spec, field.NewPath("spec")
	switch spec.Type {
	case flowcontrolv1.PriorityLevelEnablementExempt:
		if spec.Limited != nil {
			return field.ErrorList{field.Forbidden(path.Child("limited"), "must be nil if the type is not Limited")}
		}
	case flowcontrolv1.PriorityLevelEnablementLimited:
		if spec.Limited == nil {
			return field.ErrorList{field.Required(path.Child("limited"), "must not be empty when type is Limited")}
		}
		return validateLimitResponse(spec.Limited.LimitResponse, path.Child("limited").Child("limitResponse"))
	default:
		return field.ErrorList{field.NotSupported(path.Child("type"), spec.Type,
			[]string{string(flowcontrolv1.PriorityLevelEnablementExempt), string(flowcontrolv1.PriorityLevelEnablementLimited)})}
	}
	return nil
}

func validateLimitResponse(lr flowcontrolv1.LimitResponse, path *field.Path) field.ErrorList {
	switch lr.Type {
	case flowcontrolv1.LimitResponseTypeReject:
		if lr.Queuing != nil {
			return field.ErrorList{field.Forbidden(path.Child("queuing"), "must be nil if limited.limitResponse.type is not Limited")}
		}
	case flowcontrolv1.LimitResponseTypeQueue:
		q := lr.Queuing
		if q == nil {
			return field.ErrorList{field.Required(path.Child("queuing"), "must not be empty if limited.limitResponse.type is Limited")}
		}
		var errs field.ErrorList
		if q.Queues <= 0 {
			errs = append(errs, field.Invalid(path.Child("queuing").Child("queues"), q.Queues, "must be positive"))
		}
		if q.HandSize <= 0 || q.HandSize > q.Queues {
			errs = append(errs, field.Invalid(path.Child("queuing").Child("handSize"), q.HandSize, fmt.Sprintf("should not be greater than queues (%d) and must be positive", q.Queues)))
		}
		if q.QueueLengthLimit <= 0 {
			errs = append(errs, field.Invalid(path.Child("queuing").Child("queueLengthLimit"), q.QueueLengthLimit, "must be positive"))
		}
		return errs
	default:
		return field.ErrorList{field.NotSupported(path.Child("type"), lr.Type,
			[]string{string(flowcontrolv1.LimitResponseTypeQueue), string(flowcontrolv1.LimitResponseTypeReject)})}
	}
	return nil
}
