"""Issue 27: bucket website configurations, kept and returned as S3 does
(the gateway serves no website endpoint). XFS only: nothing here depends on
the filesystem."""
import pytest
from botocore.exceptions import ClientError


@pytest.fixture
def s3(make_server):
    c = make_server("xfs").client()
    c.create_bucket(Bucket="site")
    return c


def error(exc):
    e = exc.value.response["Error"]
    return e["Code"], e["Message"]


def test_website_put_get_delete(s3):
    with pytest.raises(ClientError) as e:
        s3.get_bucket_website(Bucket="site")
    assert error(e) == ("NoSuchWebsiteConfiguration",
                        "The specified bucket does not have a website configuration")
    config = {"IndexDocument": {"Suffix": "index.html"}, "ErrorDocument": {"Key": "error.html"},
              "RoutingRules": [{"Condition": {"KeyPrefixEquals": "docs/"},
                                "Redirect": {"ReplaceKeyPrefixWith": "documents/",
                                             "HttpRedirectCode": "301"}}]}
    s3.put_bucket_website(Bucket="site", WebsiteConfiguration=config)
    got = s3.get_bucket_website(Bucket="site")
    assert got["IndexDocument"] == {"Suffix": "index.html"}
    assert got["ErrorDocument"] == {"Key": "error.html"}
    assert got["RoutingRules"] == config["RoutingRules"]
    # A bucket GET is still a listing: no website is served.
    s3.put_object(Bucket="site", Key="index.html", Body=b"<html/>")
    assert [o["Key"] for o in s3.list_objects_v2(Bucket="site")["Contents"]] == ["index.html"]
    s3.delete_bucket_website(Bucket="site")
    with pytest.raises(ClientError) as e:
        s3.get_bucket_website(Bucket="site")
    assert error(e)[0] == "NoSuchWebsiteConfiguration"
    with pytest.raises(ClientError) as e:
        s3.put_bucket_website(Bucket="nosuch", WebsiteConfiguration=config)
    assert error(e)[0] == "NoSuchBucket"


@pytest.mark.parametrize("config, want", [
    ({"IndexDocument": {"Suffix": "a/index.html"}},
     ("InvalidArgument", "The IndexDocument Suffix is not well formed")),
    ({"IndexDocument": {"Suffix": "index.html"},
      "RoutingRules": [{"Condition": {}, "Redirect": {"HostName": "e.com"}}]},
     ("MalformedXML", None)),
    ({"RedirectAllRequestsTo": {"HostName": "example.com"},
      "IndexDocument": {"Suffix": "index.html"}}, ("MalformedXML", None)),
    ({"RedirectAllRequestsTo": {"HostName": "example.com", "Protocol": "ftp"}},
     ("InvalidRequest", None)),
    ({"IndexDocument": {"Suffix": "index.html"},
      "RoutingRules": [{"Redirect": {"ReplaceKeyWith": "a", "ReplaceKeyPrefixWith": "b/"}}]},
     ("InvalidRequest", "You can only define ReplaceKeyPrefix or ReplaceKey but not both.")),
    ({"IndexDocument": {"Suffix": "index.html"},
      "RoutingRules": [{"Redirect": {"HostName": "e.com", "HttpRedirectCode": "300"}}]},
     ("InvalidRequest",
      "The provided HTTP redirect code (300) is not valid. Valid codes are 3XX except 300.")),
    ({"IndexDocument": {"Suffix": "index.html"},
      "RoutingRules": [{"Condition": {"HttpErrorCodeReturnedEquals": "418"},
                        "Redirect": {"HostName": "e.com"}}]},
     ("InvalidRequest",
      "The provided HTTP error code (418) is not valid. Valid codes are 4XX or 5XX.")),
    ({"IndexDocument": {"Suffix": "index.html"},
      "RoutingRules": [{"Redirect": {"HostName": "e.com"}}] * 51},
     ("InvalidRequest", "51 routing rules provided, the number of routing rules in a website "
                        "configuration is limited to 50.")),
])
def test_website_refusals_change_nothing(s3, config, want):
    kept = {"IndexDocument": {"Suffix": "kept.html"}}
    s3.put_bucket_website(Bucket="site", WebsiteConfiguration=kept)
    with pytest.raises(ClientError) as e:
        s3.put_bucket_website(Bucket="site", WebsiteConfiguration=config)
    code, message = error(e)
    assert code == want[0]
    if want[1]:
        assert message == want[1]
    assert s3.get_bucket_website(Bucket="site")["IndexDocument"] == {"Suffix": "kept.html"}


def test_website_body_over_128_kib_refused_before_it_is_read(s3):
    rules = [{"Redirect": {"HostName": "example.com", "ReplaceKeyWith": "k" * 4000}}] * 40
    with pytest.raises(ClientError) as e:
        s3.put_bucket_website(Bucket="site", WebsiteConfiguration={
            "IndexDocument": {"Suffix": "index.html"}, "RoutingRules": rules})
    assert error(e) == ("MaxMessageLengthExceeded", "Your request was too big.")
