"""The purple agent as A2A sees it: its request handler and its messages.

:mod:`.handler` answers each message in the request's own task (the SDK's ``RequestHandler``);
:mod:`.messages` reads the query and top_k a message carries and writes the ids the agent
answers with as the task's one artifact.
"""
