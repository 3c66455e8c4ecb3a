package auth

import (
	"fmt"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/authorization/union"
)

// Authorization modes of --authorization-mode, as kube-apiserver names them.
const (
	ModeAlwaysAllow = "AlwaysAllow"
	ModeAlwaysDeny  = "AlwaysDeny"
	ModeRBAC        = "RBAC"
)

// Modes are the authorization modes sqlkube knows.
var Modes = []string{ModeAlwaysAllow, ModeAlwaysDeny, ModeRBAC}

// RuleAuthorizer decides requests and lists a user's rules (SelfSubjectRulesReview).
type RuleAuthorizer interface {
	authorizer.Authorizer
	authorizer.RuleResolver
}

// NewAuthorizer chains the modes in the order given, after the one rule kube-apiserver always
// applies first: members of system:masters may do anything. rbac is the RBAC authorizer, used
// if RBAC is among the modes. The first mode with an opinion decides.
func NewAuthorizer(modes []string, rbac RuleAuthorizer) (RuleAuthorizer, error) {
	authorizers := []union.NamedAuthorizer{{AuthorizerName: "privileged-groups", Authorizer: authorizerfactory.NewPrivilegedGroups(user.SystemPrivilegedGroup)}}
	var resolvers []authorizer.RuleResolver
	for _, mode := range modes {
		var a RuleAuthorizer
		switch mode {
		case ModeAlwaysAllow:
			a = authorizerfactory.NewAlwaysAllowAuthorizer()
		case ModeAlwaysDeny:
			a = authorizerfactory.NewAlwaysDenyAuthorizer()
		case ModeRBAC:
			a = rbac
		default:
			return nil, fmt.Errorf("unknown authorization mode %q (known: %v)", mode, Modes)
		}
		if a == nil {
			return nil, fmt.Errorf("authorization mode %s has no authorizer", mode)
		}
		authorizers = append(authorizers, union.NamedAuthorizer{AuthorizerName: mode, Authorizer: a})
		resolvers = append(resolvers, a)
	}
	chain, err := union.New(authorizers...)
	if err != nil {
		return nil, err
	}
	return ruleAuthorizer{Authorizer: chain, RuleResolver: union.NewRuleResolvers(resolvers...)}, nil
}

type ruleAuthorizer struct {
	authorizer.Authorizer
	authorizer.RuleResolver
}
