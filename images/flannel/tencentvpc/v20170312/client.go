// Package v20170312 stands in for Tencent Cloud's VPC API client, whose module versions the Go module
// proxy does not serve, so that flanneld links. It holds only what flanneld's tencent-vpc backend
// names, and every call fails: a node that selects that backend gets a clear error at start, and
// the vxlan backend Talos's manifests configure never calls it.
package v20170312

import "errors"

// ErrNotBuiltIn is what every call answers.
var ErrNotBuiltIn = errors.New("the tencent-vpc backend is not built into this flanneld: Tencent Cloud's VPC client is left out")

type Filter struct {
	Name   *string
	Values []*string
}

type Route struct {
	DestinationCidrBlock *string
	GatewayType          *string
	GatewayId            *string
	RouteId              *uint64
	RouteType            *string
	Enabled              *bool
}

type RouteTable struct {
	RouteTableId *string
	RouteSet     []*Route
}

type DescribeRouteTablesRequest struct{ Filters []*Filter }

type DescribeRouteTablesResponse struct {
	Response *struct{ RouteTableSet []*RouteTable }
}

type DeleteRoutesRequest struct {
	RouteTableId *string
	Routes       []*Route
}

type DeleteRoutesResponse struct{}

type CreateRoutesRequest struct {
	RouteTableId *string
	Routes       []*Route
}

type CreateRoutesResponse struct{}

type Client struct{}

func NewClientWithSecretId(secretId, secretKey, region string) (*Client, error) {
	return nil, ErrNotBuiltIn
}

func NewDescribeRouteTablesRequest() *DescribeRouteTablesRequest { return &DescribeRouteTablesRequest{} }
func NewDeleteRoutesRequest() *DeleteRoutesRequest               { return &DeleteRoutesRequest{} }
func NewCreateRoutesRequest() *CreateRoutesRequest               { return &CreateRoutesRequest{} }

func (c *Client) DescribeRouteTables(*DescribeRouteTablesRequest) (*DescribeRouteTablesResponse, error) {
	return nil, ErrNotBuiltIn
}

func (c *Client) DeleteRoutes(*DeleteRoutesRequest) (*DeleteRoutesResponse, error) {
	return nil, ErrNotBuiltIn
}

func (c *Client) CreateRoutes(*CreateRoutesRequest) (*CreateRoutesResponse, error) {
	return nil, ErrNotBuiltIn
}
