"""The local session's JVM gets the packaged profile's JVM defaults and the user's own options."""

from __future__ import annotations

from spark_synth.session import load_profile


def _jvm_arguments(spark) -> list[str]:
    bean = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    return [str(a) for a in bean.getInputArguments()]


def test_the_profile_and_the_user_jvm_options_both_reach_the_driver_jvm(spark):
    arguments = _jvm_arguments(spark)
    packaged = load_profile("local")["spark"]["spark.driver.defaultJavaOptions"].split()
    assert "-XX:G1PeriodicGCInterval=10000" in packaged  # idle heap is handed back (JEP 346)
    for option in packaged:
        assert option in arguments, f"{option} did not reach the driver JVM: {arguments}"
    # the session's own Derby home used to replace the user's extraJavaOptions instead of joining them
    assert "-Dspark_synth.test.marker=1" in arguments
    assert any(a.startswith("-Dderby.system.home=") for a in arguments)
