package auth

import (
	"fmt"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/authorization/union"
)

// Authorization modes of --authorization-mode, as kube-apiserver names them.
const (
	ModeAlwaysAllow = "AlwaysAllow"
	ModeAlwaysDeny  = "AlwaysDeny"
	ModeNode        = "Node"
	ModeRBAC        = "RBAC"
)

// Modes are the authorization modes sqlkube knows.
var Modes = []string{ModeAlwaysAllow, ModeAlwaysDeny, ModeNode, ModeRBAC}

// RuleAuthorizer decides requests and lists a user's rules (SelfSubjectRulesReview).
type RuleAuthorizer interface {
	authorizer.Authorizer
	authorizer.RuleResolver
}

// NewAuthorizer chains the modes in the order given, after the one rule kube-apiserver always
// applies first: members of system:masters may do anything. rbac and node are the RBAC and Node
// authorizers, used if their modes are among the modes. The first mode with an opinion decides.
func NewAuthorizer(modes []string, rbac, node RuleAuthorizer) (RuleAuthorizer, error) {
	// Named as kube-apiserver names them: a denial's reason names the mode that gave it.
	authorizers := []union.NamedAuthorizer{{AuthorizerName: "kubernetes.io/system-privileged-group", Authorizer: authorizerfactory.NewPrivilegedGroups(user.SystemPrivilegedGroup)}}
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
		case ModeNode:
			a = node
		default:
			return nil, fmt.Errorf("unknown authorization mode %q (known: %v)", mode, Modes)
		}
		if a == nil {
			return nil, fmt.Errorf("authorization mode %s has no authorizer", mode)
		}
		authorizers = append(authorizers, union.NamedAuthorizer{AuthorizerName: strings.ToLower(mode), Authorizer: a})
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
