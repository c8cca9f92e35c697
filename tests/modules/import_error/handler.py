import a_package_that_does_not_exist  # noqa
