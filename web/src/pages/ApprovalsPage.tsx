export default function ApprovalsPage() { return <h1>Approvals</h1>; }
