class NotAModule:  # not a ContextModule subclass
    pass
